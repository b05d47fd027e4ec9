"""The speaker queue: real espeak-ng speech to WAV, one utterance at a time, urgent first, mute."""

import wave

import numpy as np
import pytest

from hardware.clock import SimClock
from hardware.speaker import Speaker, WavVoice, wav_duration


class CountingVoice:
    """A voice that takes a fixed time per word (no subprocess), for queue-order tests."""

    realtime = False

    def __init__(self):
        self.said = []

    def speak(self, text):
        self.said.append(text)
        return 0.3 * len(text.split())


def test_wav_is_real_speech_of_plausible_length(tmp_path):
    clock = SimClock()
    voice = WavVoice(tmp_path)
    sp = Speaker(voice, clock)
    sp.say("Ben: pull a red block or a 3")
    (path,) = voice.files
    with wave.open(str(path), "rb") as w:
        rate, n = w.getframerate(), w.getnframes()
        audio = np.frombuffer(w.readframes(n), dtype=np.int16).astype(float)
    dur = n / rate
    assert 1.0 < dur < 4.0  # eight words at 160 words per minute
    assert np.sqrt(np.mean(audio ** 2)) > 500  # not silence
    # speech comes in syllables: the loudness envelope rises and falls many times
    env = np.array([np.abs(audio[i:i + rate // 50]).mean() for i in range(0, len(audio) - rate // 50, rate // 50)])
    loud = env > env.max() * 0.2
    assert np.count_nonzero(np.diff(loud.astype(int)) == 1) >= 4
    assert sp.intervals() == [(0.0, pytest.approx(wav_duration(path)))]


def test_one_utterance_at_a_time_in_clock_time():
    clock = SimClock()
    voice = CountingVoice()
    sp = Speaker(voice, clock)
    sp.say("one two three four")     # 1.2 s
    sp.say("five six")
    assert voice.said == ["one two three four"] and sp.speaking
    clock.set(1.0)
    assert sp.speaking and len(voice.said) == 1
    clock.set(1.25)
    assert not sp.speaking or len(voice.said) == 2
    assert voice.said == ["one two three four", "five six"]
    (a0, a1), (b0, b1) = sp.intervals()
    assert b0 >= a1  # never talks over itself


def test_fouls_and_end_of_round_go_first():
    clock = SimClock()
    voice = CountingVoice()
    sp = Speaker(voice, clock)
    sp.say("Ana: pull a blue block or a 2")
    sp.say("Ben: pull a red block")
    sp.say("Foul: wrong block", urgent=True)
    clock.set(10)
    sp.pump()
    assert voice.said[-1] == "Foul: wrong block"  # Ben waits until the foul has been said
    clock.set(20)
    sp.pump()
    assert voice.said == ["Ana: pull a blue block or a 2", "Foul: wrong block", "Ben: pull a red block"]
    assert [u.urgent for u in sp.spoken] == [False, True, False]


def test_muted_speaker_says_nothing():
    clock = SimClock()
    voice = CountingVoice()
    sp = Speaker(voice, clock, muted=True)
    sp.say("hello")
    assert voice.said == [] and not sp.speaking


def test_listeners_hear_each_interval_for_hold_off():
    clock = SimClock()
    got = []
    sp = Speaker(CountingVoice(), clock)
    sp.listeners.append(lambda u: got.append((u.t0, u.t1)))
    sp.say("a b")
    assert got == [(0.0, pytest.approx(0.6))]


def test_a_backlog_drops_the_oldest_routine_announcement():
    clock = SimClock()
    sp = Speaker(CountingVoice(), clock, max_pending=2)
    for i in range(5):
        sp.say(f"turn {i}")
    assert sp.pending() == ["turn 3", "turn 4"] and sp.dropped == ["turn 1", "turn 2"]


def test_a_realtime_voice_never_overlaps_itself():
    import threading

    from hardware.clock import RealClock

    class BlockingVoice:
        realtime = True

        def __init__(self):
            self.active = 0
            self.max_active = 0
            self.said = []
            self.lock = threading.Lock()
            self.done = threading.Event()
            self.gate = threading.Event()
            self.entered = threading.Event()

        def speak(self, text):
            self.entered.set()
            self.gate.wait(5.0)  # the first utterance holds the line until everything is queued
            with self.lock:
                self.active += 1
                self.max_active = max(self.max_active, self.active)
            threading.Event().wait(0.01)
            with self.lock:
                self.active -= 1
                self.said.append(text)
                if len(self.said) == 4:
                    self.done.set()
            return 0.01

    voice = BlockingVoice()
    sp = Speaker(voice, RealClock())
    sp.say("turn 0")
    assert voice.entered.wait(5.0)  # turn 0 is being spoken
    assert len(sp.intervals()) == 1 and sp.speaking  # the hold-off is known while it speaks, not after
    sp.say("turn 1")
    sp.say("turn 2")
    sp.say("Foul: two hands", urgent=True)
    voice.gate.set()
    assert voice.done.wait(5.0)
    sp.close()
    assert voice.max_active == 1 and len(sp.spoken) == 4
    assert voice.said == ["turn 0", "Foul: two hands", "turn 1", "turn 2"]
