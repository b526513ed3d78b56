"""The random-program fuzzer: generator.py draws programs, oracle.py checks them."""
