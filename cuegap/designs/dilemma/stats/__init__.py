"""Pure statistics of the dilemma design (seed 000)."""
