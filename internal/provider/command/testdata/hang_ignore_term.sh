#!/bin/sh
# Fake agent: ignores SIGTERM (its child inherits that) and hangs forever.
trap '' TERM
cat > /dev/null
sleep 1000 &
echo $! > "$FAKE_AGENT_PIDFILE"
wait
