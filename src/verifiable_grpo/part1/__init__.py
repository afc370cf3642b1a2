"""Part I of the book: the pipeline, the group-size exercise, the report, demos."""
