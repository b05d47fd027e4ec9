"""The errors a frame itself is the cause of, in words a player understands, apart from faults
in the reader: a batch reports the first as the image's problem and the second as a bug."""


class UnreadableFrame(ValueError):
    """The frame cannot be read as given: not a colour image, one without colour, or another
    size than the camera's lens was calibrated at. (A ValueError, as callers caught before.)"""


def reader_fault(exc: BaseException) -> str:
    """The words for a fault in the reader itself (not the image's), for that image's error: one
    image must not stop a batch, and the fault must be reported, not hidden."""
    return (f"the reader failed on this image ({type(exc).__name__}: {exc}); the other images are read. "
            "Please report it with the image")
