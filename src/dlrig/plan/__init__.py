"""The planner: the best build for a budget (`plan`), and the best next dollar (`upgrade`)."""
