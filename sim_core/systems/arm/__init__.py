"""The robot arm: the Franka Emika Panda model (``panda``) and its dynamics."""
