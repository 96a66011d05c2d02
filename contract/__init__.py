"""The contract between the packages: the events dataset's columns, Kafka's own numbers and names, and the limits
a decode runs under (``limits.py``).

``inspector`` writes the events, ``pipelines`` reads them, ``decoders`` names the APIs; all three take these
definitions from here, and this package imports only the standard library (an import-linter contract in
pyproject.toml keeps it so).
"""
