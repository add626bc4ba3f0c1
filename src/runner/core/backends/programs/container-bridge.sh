# The container's port bridge (see ../container.ts), run as `/bin/sh -c <this text> <port>`:
# one connection between stdin/stdout and 127.0.0.1:<port> inside the container.
p=$0
if command -v bash >/dev/null 2>&1; then exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/$0 || exit 111; exec 4<&0; cat <&4 >&3 & cat <&3; kill $! 2>/dev/null' "$p"; fi
if command -v python3 >/dev/null 2>&1; then exec python3 -c '
import socket,sys,threading
s=socket.create_connection(("127.0.0.1",int(sys.argv[1])))
def up():
  while True:
    d=sys.stdin.buffer.read1(65536)
    if not d: break
    s.sendall(d)
threading.Thread(target=up,daemon=True).start()
while True:
  d=s.recv(65536)
  if not d: break
  sys.stdout.buffer.write(d); sys.stdout.buffer.flush()
' "$p"; fi
echo "neither bash nor python3 in the image: Belay cannot reach the agent's port" >&2; exit 127
