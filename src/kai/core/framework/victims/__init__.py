"""Victim search for reclaim, preempt and consolidation: scenarios of victims, the filters that pass over hopeless
ones, and the solver that simulates them within the search budgets."""
