"""Reading user files safely: size, encoding and format checks that every loader shares."""
