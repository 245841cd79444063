#!/bin/sh
# Fake agent: answers, but leaves a background child behind.
cat > /dev/null
sleep 1000 >/dev/null 2>&1 &
echo $! > "$FAKE_AGENT_PIDFILE"
echo '{"ok":true}'
