"""``wyoming-fasttts doctor``: environment checks, then parity and latency of the GPU engine against the CPU."""
