#!/bin/sh
# Fake agent: saves the prompt it reads on stdin and answers with JSON.
cat > "$FAKE_AGENT_STDIN"
printf '{"ok":true,"env":"%s","args":"%s"}\n' "$DIFFPAL_FAKE_VAR" "$*"
