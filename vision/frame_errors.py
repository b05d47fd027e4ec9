"""The errors a frame itself is the cause of, in words a player understands, apart from faults
in the reader: a batch reports the first as the image's problem and the second as a bug."""


class UnreadableFrame(ValueError):
    """The frame cannot be read as given: not a colour image, one without colour, or another
    size than the camera's lens was calibrated at. (A ValueError, as callers caught before.)"""
