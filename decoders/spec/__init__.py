"""Convert Apache Kafka's message JSON specs into the project's own structural schema.

The project keeps only the structure it needs (names, types, versions, nullable/tagged/flexible
information, common structs inlined); Kafka's comments and ``about`` prose are dropped.
"""
