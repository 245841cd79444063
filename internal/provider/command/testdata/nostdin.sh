#!/bin/sh
# Fake agent: answers without reading stdin at all.
echo '{"ok":true}'
