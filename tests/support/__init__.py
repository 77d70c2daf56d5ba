"""Test support shared by the test packages: fakes of the hardware libraries."""
