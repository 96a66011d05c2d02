"""Kafka messages in, rows and files out: the Arrow event table, the writers (Parquet, JSONL), the output folder,
connection ids, the run's summary, the client inventory and the topic map."""
