/**
 * Token-shaped values for tests that plant fake secrets and check they never leave in clear. Each is
 * assembled at run time from its prefix and body, so the source holds no literal that secret scanners
 * (gitleaks, GitHub push protection, vsce) flag, while the test plants and looks for the same string.
 */
export function planted(prefix: string, body: string): string {
  return prefix + body;
}
