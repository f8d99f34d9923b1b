"""Instruments that measure the lab rather than the product: the host machine's own speed
(host_probe), and clocks that run the service with its collector passes (gc_clock) or decoding
rounds (round_clock) logged, for `python -m benchmarks.service_load --clock MODULE`."""
