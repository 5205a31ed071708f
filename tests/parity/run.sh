#!/bin/sh
# Placeholder replaced by the parity harness.
echo "parity: 0 passed, 0 failed"
