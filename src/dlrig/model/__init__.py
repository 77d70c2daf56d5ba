"""The performance model: step-time stages, memory, power, energy. Pure functions."""
