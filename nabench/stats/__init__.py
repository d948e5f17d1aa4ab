"""Statistics shared by labeling and evaluation: intervals, paired tests, κ, reliability."""
