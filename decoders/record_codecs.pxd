# No extension types: this file compiles record_codecs.py with its annotations not taken as C types, as records.py.
