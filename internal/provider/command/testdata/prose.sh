#!/bin/sh
# Fake agent: wraps its JSON answer in prose and a Markdown fence.
cat > /dev/null
cat <<'OUT'
Sure! I reviewed the change. Placeholders like {path} are fine.

```json
{"ok": true, "note": "fenced"}
```

Let me know if you need anything else.
OUT
