"""How the captures of ``pcaps/`` are made: brokers, tcpdump, the clients and the scenarios (``make_captures.py`` is the
command)."""
