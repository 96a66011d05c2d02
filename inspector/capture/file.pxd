# The file adapter declares no types of its own (RawPacket is capture_parser's); this file compiles it with
# its annotations not taken as C types, as the other hot-path modules.
