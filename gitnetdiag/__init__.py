"""gitnetdiag: network-layer diagnosis of slow Git transfers."""

__version__ = "0.1.0"
