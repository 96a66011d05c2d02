# No extension types: this file compiles checksums.py with its annotations not taken as C types, as records.py.
