# PUT of exactly n bytes (argv[1]) from stdin with Python's standard library, in place of curl (upload.ts): the URL
# read from file descriptor 3 as a curl config line (never argv or environment), the status line and headers printed
# as `curl -D -` does; exit 22 on a status outside 2xx, as curl -f.
import sys, re, http.client, urllib.parse
cfg = open(3, encoding="ascii").read()
u = urllib.parse.urlsplit(re.search(r'^url = "([^"]+)"$', cfg, re.M).group(1))
C = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
c = C(u.hostname, u.port, timeout=600)
n = int(sys.argv[1])
c.putrequest("PUT", u.path + ("?" + u.query if u.query else ""), skip_accept_encoding=True)
c.putheader("Content-Length", str(n))
c.endheaders()
left = n
while left > 0:
    b = sys.stdin.buffer.read(min(1 << 20, left))
    if not b: sys.exit("the file ended early")
    c.send(b)
    left -= len(b)
r = c.getresponse()
r.read()
print("HTTP/1.1 %d %s" % (r.status, r.reason))
for k, v in r.getheaders(): print("%s: %s" % (k, v))
sys.exit(0 if 200 <= r.status < 300 else 22)
