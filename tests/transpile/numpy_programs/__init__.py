"""Classic numpy programs, written for these tests as a user writes them for plain numpy (no port to
transpile): each module keeps its numpy state (weights, optimiser memories) in globals or objects, and
tests/transpile/test_numpy_programs.py runs them plainly and converted over several successive calls."""
