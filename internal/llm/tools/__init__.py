"""One module per tool; the contract and registry are in ``tools``."""
