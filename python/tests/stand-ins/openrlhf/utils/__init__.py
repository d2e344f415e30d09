"""Stand-in for the openrlhf package (tests only; see ../README.md)."""
