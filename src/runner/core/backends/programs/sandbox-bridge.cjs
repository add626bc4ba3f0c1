'use strict';/* belay helper */
// The sandbox's port bridge (see ../sandbox.ts), run as `node -e <this text> <plan> <program> [args…]`
// inside the sandbox. Its text starts with BELAY_HELPER_MARK (the line above), which is how the
// protocol hints know it for Belay's own helper.
const net=require('node:net'),fs=require('node:fs'),cp=require('node:child_process');
const plan=JSON.parse(process.argv[1]),argv=process.argv.slice(2);
const pipe=(a,b)=>{a.on('error',()=>b.destroy());b.on('error',()=>a.destroy());a.pipe(b).pipe(a);};
let waiting=1;const ready=()=>{if(--waiting===0)start();};
const serve=(handler,...address)=>{waiting++;const s=net.createServer(handler);
s.on('error',(e)=>{process.stderr.write('belay bridge: '+e.message+'\n');process.exit(70);});s.listen(...address,ready);};
for(const [sock,port] of plan.in){fs.rmSync(sock,{force:true});serve((c)=>pipe(c,net.connect(port,'127.0.0.1')),sock);}
for(const [port,sock] of plan.out)serve((c)=>pipe(c,net.connect(sock)),port,'127.0.0.1');
function start(){const env={...process.env};delete env.ELECTRON_RUN_AS_NODE;
const child=cp.spawn(argv[0],argv.slice(1),{stdio:'inherit',env});
for(const s of ['SIGTERM','SIGINT','SIGHUP'])process.on(s,()=>child.kill(s));
child.on('error',(e)=>{process.stderr.write(argv[0]+': '+e.message+'\n');process.exit(127);});
child.on('exit',(code,signal)=>{if(signal){process.removeAllListeners(signal);process.kill(process.pid,signal);}process.exit(code??1);});}
ready();
