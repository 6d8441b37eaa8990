"""The sieve of Eratosthenes on a boolean array: a strided slice assignment `is_prime[i*i::i] = False` for
each prime up to int(n ** 0.5), the primes read with np.nonzero."""
import numpy as np


def primes_up_to(n):
    is_prime = np.ones(n + 1, dtype=bool)
    is_prime[:2] = False
    for i in range(2, int(n ** 0.5) + 1):
        if is_prime[i]:
            is_prime[i * i::i] = False
    return np.nonzero(is_prime)[0]


def cases():
    return [(30,), (2,), (1,), (0,)]
