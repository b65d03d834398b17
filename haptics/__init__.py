"""The 1 kHz side: PMI proxy, four-channel passive coupling, force limits, watchdog (issue 3)."""
