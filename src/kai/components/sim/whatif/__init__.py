"""What-if runs: the same world run twice, as it is and with changes, side by side on the simulated clock."""
