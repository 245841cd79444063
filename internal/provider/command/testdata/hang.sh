#!/bin/sh
# Fake agent: spawns a child and hangs forever.
cat > /dev/null
sleep 1000 &
echo $! > "$FAKE_AGENT_PIDFILE"
wait
