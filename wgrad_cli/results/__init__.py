"""Results files and what reads them: records, tables, compare, speed-ups, plots."""
