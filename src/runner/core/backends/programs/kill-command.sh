# Stops one container command's processes (see ../command-watch.ts), run inside as the command's
# user: `sh -c <this text> belay-kill <id> <variable>`. Stops every process whose environment
# holds <variable>=<id> and every process whose parent was stopped, round after round until a
# round finds no new one (stopped processes cannot fork), then kills them all.
id=$1 var=$2 me=$$ taken=' ' round=0
while [ $round -lt 200 ]; do
  round=$((round + 1)); found=''
  for f in $(grep -l -e "$var=$id" /proc/[0-9]*/environ 2>/dev/null); do
    p=${f#/proc/}; p=${p%/environ}
    case "$taken" in *" $p "*) ;; *) [ "$p" != "$me" ] && found="$found $p" ;; esac
  done
  children=$(grep -H '^PPid:' /proc/[0-9]*/status 2>/dev/null | while IFS=: read -r f _ pp; do
    p=${f#/proc/}; p=${p%/status}; pp=${pp#"${pp%%[0-9]*}"}
    case "$taken" in *" $pp "*) case "$taken" in *" $p "*) ;; *) echo "$p" ;; esac ;; esac
  done)
  for p in $children; do case "$found " in *" $p "*) ;; *) [ "$p" != "$me" ] && found="$found $p" ;; esac; done
  [ -z "$found" ] && break
  kill -STOP $found 2>/dev/null
  taken="$taken${found# } "
done
[ "$taken" = ' ' ] || kill -KILL $taken 2>/dev/null
exit 0
