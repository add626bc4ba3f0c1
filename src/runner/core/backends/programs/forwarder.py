# The host services' forwarder inside a container (see ../container.ts), run as
# `python3 -c <this text> <plan>`, the plan being JSON [[port, socket], …]: listens on
# 127.0.0.1:<port> for each pair, pipes each connection to the socket, and prints
# belay-forwarder-ready once every port listens.
import json,socket,sys,threading
def pump(a,b):
  try:
    while True:
      d=a.recv(65536)
      if not d: break
      b.sendall(d)
  except OSError: pass
  try: b.shutdown(socket.SHUT_WR)
  except OSError: pass
def handle(c,path):
  u=socket.socket(socket.AF_UNIX)
  try: u.connect(path)
  except OSError:
    c.close(); u.close(); return
  t=threading.Thread(target=pump,args=(u,c),daemon=True); t.start()
  pump(c,u); t.join(); c.close(); u.close()
def serve(l,path):
  while True:
    c,_=l.accept()
    threading.Thread(target=handle,args=(c,path),daemon=True).start()
listeners=[]
for port,path in json.loads(sys.argv[1]):
  l=socket.socket(); l.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); l.bind(("127.0.0.1",port)); l.listen(128)
  listeners.append((l,path))
for l,path in listeners: threading.Thread(target=serve,args=(l,path),daemon=True).start()
print("belay-forwarder-ready",flush=True)
threading.Event().wait()
