#!/bin/sh
# Fake agent: ignores SIGTERM (its child inherits that) and hangs forever.
# FAKE_AGENT_DELAY (seconds) makes it slow to get there, like a loaded
# machine.
trap '' TERM
cat > /dev/null
[ -n "$FAKE_AGENT_DELAY" ] && sleep "$FAKE_AGENT_DELAY"
sleep 1000 &
echo $! > "$FAKE_AGENT_PIDFILE"
wait
