import { utils } from 'ssh2';

/** A fresh public key blob: ed25519 from ssh2, or any type from ssh-keygen. */
export function ssh2Ed25519(): { blob: Buffer; line: string } {
  // ssh2 drops a leading zero byte of about 1 in 256 generated ed25519 public keys: retry.
  let pair = utils.generateKeyPairSync('ed25519');
  let parsed = utils.parseKey(pair.public);
  for (let i = 0; i < 32 && parsed instanceof Error; i++) {
    pair = utils.generateKeyPairSync('ed25519');
    parsed = utils.parseKey(pair.public);
  }
  if (parsed instanceof Error) throw parsed;
  const blob = parsed.getPublicSSH();
  return { blob, line: pair.public.trim() };
}
