"""See et al.'s pointer-generator summarizer with ACVI."""
