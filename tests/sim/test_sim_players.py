"""Simulated players listen to the referee: legal pulls unless their profile says they slip."""

import random

from hardware.sim.players import SimPlayer, SkillProfile
from referee.engine import new_round
from referee.events import Place, Pull
from referee.tower import random_tower


def round_for(seed):
    return new_round(["Ana", "Ben", "Cy"], random_tower(random.Random(seed)))


def test_a_flawless_player_only_pulls_what_the_referee_allows_and_places_where_allowed():
    flawless = SkillProfile(care=0.9, two_hand_rate=0, wrong_block_rate=0, forbidden_level_rate=0)
    rnd = round_for(1)
    rng = random.Random(1)
    players = {n: SimPlayer(n, i, flawless, rng) for i, n in enumerate(rnd.players)}
    for _ in range(12):
        if rnd.over or rnd.waiting_for:
            break
        p = players[rnd.turn]
        choice = p.choose_pull(rnd)
        legal = {(o.level, o.slot) for o in rnd.legal_pulls()} or {(o.level, o.slot) for o in rnd.available()}
        assert (choice.level, choice.slot) in legal and choice.intent == "legal" and not choice.two_hands
        rnd = rnd.apply(Pull(level=choice.level, slot=choice.slot, player=p.name))
        level, slot = p.choose_place(rnd)
        assert (level, slot) in rnd.place_options()
        rnd = rnd.apply(Place(level=level, slot=slot, player=p.name))
        assert not rnd.news.fouls


def test_a_careless_player_sometimes_breaks_the_rules():
    sloppy = SkillProfile(care=0.2, two_hand_rate=0.3, wrong_block_rate=0.3, forbidden_level_rate=0.3)
    rnd = round_for(2)
    player = SimPlayer("Ana", 0, sloppy, random.Random(3))
    intents = [player.choose_pull(rnd) for _ in range(60)]
    kinds = {c.intent for c in intents}
    assert "forbidden-level" in kinds and any(c.two_hands for c in intents)


def test_a_careful_player_leaves_tight_blocks_alone_and_a_careless_one_hardly_notices():
    rnd = round_for(4)
    legal = [(o.level, o.slot) for o in rnd.legal_pulls()]
    loose = {legal[len(legal) // 2]}  # one loose block among the allowed ones; the rest are all tight
    feel = lambda level, slot: 0.3 if (level, slot) in loose else 1.0

    def share_loose(skill, seed):
        player = SimPlayer("Ana", 0, skill, random.Random(seed))
        picks = [player.choose_pull(rnd, feel=feel) for _ in range(200)]
        return sum((c.level, c.slot) in loose for c in picks if c.intent == "legal") / len(picks)

    careful = share_loose(SkillProfile.careful(), 5)
    careless = share_loose(SkillProfile.careless(), 5)
    assert careful > 0.8
    assert careless < careful - 0.3
