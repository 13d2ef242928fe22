"""People named only by a role ("the cook", "the Duke", "the drug dealer"): CharE candidates
for the sentences a name-based detector cannot reach.

A candidate is a noun chunk whose head is a person-like role noun (:data:`ROLE_NOUNS`), that
opens with "the" (or is a bare capitalised title such as "Duke"), and whose head word the
context has not used yet. An indefinite "a woman" introduces its person and is no candidate
(out of fold on train, 7 of 255 indefinite chunks were gold CharE against 45 of 256 definite).
Each gets the same features as a name (:mod:`model_server.introductions` on its head word),
so the MiniLM ``role`` head can read them beside the role's contextual embedding.
"""

from __future__ import annotations

from model_server.introductions import introduction_features

_ROLE_WORDS = """
king queen prince princess duke duchess count countess earl lord lady baron baroness emperor
empress sultan pope cardinal bishop priest vicar clergyman minister monk nun friar abbot abbess
chaplain knight squire page servant maid maidservant butler footman steward cook chef housekeeper
nurse governess tutor teacher professor student pupil scholar doctor physician surgeon lawyer
judge magistrate sheriff constable policeman officer detective inspector captain colonel general
lieutenant sergeant soldier guard sentry sailor pirate admiral commander commandant mayor governor
senator president chancellor merchant shopkeeper innkeeper landlord landlady tenant farmer
shepherd shepherdess peasant fisherman hunter woodcutter blacksmith smith carpenter tailor baker
butcher miller porter messenger herald clown fool jester poet painter musician singer actor
actress dancer player orator philosopher soothsayer prophet witch wizard sorcerer magician
conjurer fairy ghost demon devil angel giant dwarf stranger visitor guest traveller traveler
pilgrim beggar thief robber bandit outlaw murderer assassin prisoner captive slave villain hero
heroine widow widower orphan bride groom bridegroom husband wife fiance fiancee lover mistress
master gentleman gentlewoman man woman boy girl child baby infant youth lad lass maiden fellow
neighbour neighbor friend companion enemy rival father mother son daughter brother sister uncle
aunt cousin nephew niece grandfather grandmother grandson granddaughter stepmother stepfather
guardian ward heir heiress dealer driver cabman coachman boatman ferryman gardener gamekeeper
keeper jailer gaoler executioner hangman secretary clerk banker agent spy courier manager boss
owner employer employee worker dentist patient client customer waiter waitress bartender barman
host hostess conspirator rebel traitor rogue scoundrel knave courtier attendant usher nobleman
noblewoman official ambassador envoy consul tribune citizen townsman villager hermit shaman chief
chieftain warrior archer
"""
ROLE_NOUNS = frozenset(_ROLE_WORDS.split())
"""Head nouns (lemma or word, lower case) that name a person by what they are."""


def role_chunks(doc, ctx_lower: set[str], taken: list[tuple[int, int]]):
    """The role-named-person noun chunks of the parsed sentence ``doc`` whose head word is
    new to the context (``ctx_lower``: its lower-cased words) and that overlap no span in
    ``taken`` (the name candidates)."""
    for chunk in doc.noun_chunks:
        head = chunk.root
        lemma, word = head.lemma_.lower(), head.lower_
        if head.pos_ not in ("NOUN", "PROPN") or not {lemma, word} & ROLE_NOUNS:
            continue
        bare_title = head.i == chunk.start and head.text[:1].isupper()
        if chunk[0].lower_ != "the" and not bare_title:
            continue
        if lemma in ctx_lower or word in ctx_lower:
            continue
        if any(s < chunk.end_char and chunk.start_char < e for s, e in taken):
            continue
        yield chunk


def role_features(chunk, inp, ctx_lower: set[str], n_ctx_words: int) -> dict[str, float]:
    """The name candidates' features (same keys) for a role chunk of ``inp.sentence``."""
    sentence, context = inp.sentence, inp.context
    head = chunk.root
    start, end = chunk.start_char, chunk.end_char
    content = [t for t in chunk if t.pos_ in ("NOUN", "ADJ", "PROPN")]
    seen = [t.lower_ in ctx_lower for t in content] or [False]
    feats = {
        "is_person": 0.0,
        "is_propn": 0.0,
        "is_other_ent": 0.0,
        "all_new": float(not any(seen)),
        "any_new": float(not all(seen)),
        "frac_seen": sum(seen) / len(seen),
        "full_in_ctx": float(sentence[start:end] in context),
        "appos": float(any(c.dep_ == "appos" for c in head.children) or head.dep_ == "appos"),
        "comma_after": float(sentence[end : end + 5].startswith(",")),
        "possessive": float(sentence[end : end + 2] == "'s"),
        "sent_initial": float(start == 0),
        "n_tokens": float(len(content)),
        "is_subject": float(head.dep_ in ("nsubj", "nsubjpass")),
        "ctx_empty": float(n_ctx_words == 0),
        "log_ctx": min(1.0, n_ctx_words / 1000),
        "opens_segment": float(inp.opens_segment),
    }
    feats.update(introduction_features(sentence, head.idx, head.idx + len(head.text), context))
    return feats
