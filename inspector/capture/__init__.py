"""Capture files in, packets out: pcap/pcapng parsing (sans-I/O, fed chunks), opening files, link/IP/TCP parsing."""
