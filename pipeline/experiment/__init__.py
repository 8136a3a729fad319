"""The experiment definition: the config schema and its validation (`config`), and the plan it becomes (`plan`)."""
