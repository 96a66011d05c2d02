"""A read, end to end: captures through the pipeline into rows (one process or ``--jobs``), and its options."""
