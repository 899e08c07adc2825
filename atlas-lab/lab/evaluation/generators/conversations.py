"""The ``conversations`` corpus: long two-person chat histories, generated from hand-written
material (the beats below, the small talk in ``small_talk.py``).

A chat has 15+ dated sessions over months. Each session holds a few *beats* (exchanges that
carry facts: a dog adopted, a job offer, a move; some facts change later) inside small talk.
Answers often only make sense with the turn before ("We did! She's coming home Saturday").
Every turn is an episodic memory (its text is what the speaker said; the speaker's name is in
``speaker``); questions name their evidence turns. Question kinds: ``single_hop`` (one turn
answers), ``multi_hop`` (two or more turns, all needed), ``temporal`` (when, or what happened
at a time), ``open`` (a summary over several turns, all counted).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from lab.evaluation.generators import small_talk
from lab.evaluation.generators.common import balanced_splits, fill, iso, minutes, pick, rng_for

Line = tuple[str, str]  # ("A" | "B", text with ||-separated phrasings)
Ref = tuple[str, int]  # (beat tag, line index)


@dataclass(frozen=True)
class Beat:
    session: int
    tag: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Ask:
    kind: str
    text: str
    evidence: tuple[Ref, ...]


@dataclass(frozen=True)
class Chat:
    persona: str
    prefix: str
    a: str
    b: str
    description: str
    sessions: tuple[str, ...]  # dates, YYYY-MM-DD
    now: str
    beats: tuple[Beat, ...]
    asks: tuple[Ask, ...]
    offset: str = "+00:00"
    extra: dict[str, Any] = field(default_factory=dict)


def _b(session: int, tag: str, *lines: Line) -> Beat:
    return Beat(session, tag, tuple(lines))


def _q(kind: str, text: str, *evidence: Ref) -> Ask:
    return Ask(kind, text, tuple(evidence))


MAYA_TOM = Chat(
    persona="chat_maya_tom",
    prefix="mt",
    a="Maya",
    b="Tom",
    description="Maya Okafor and Tom Reilly, friends since university, chatting from Leeds "
    "and Bristol over most of 2026: a rescue greyhound, a design job, a move to Glasgow, a "
    "half marathon.",
    sessions=(
        "2026-02-03",
        "2026-02-17",
        "2026-03-01",
        "2026-03-15",
        "2026-03-29",
        "2026-04-12",
        "2026-04-26",
        "2026-05-09",
        "2026-05-19",
        "2026-06-02",
        "2026-06-20",
        "2026-07-04",
        "2026-07-18",
        "2026-08-09",
        "2026-08-30",
        "2026-09-20",
        "2026-10-10",
    ),
    now="2026-10-20T12:00:00+00:00",
    beats=(
        _b(
            0,
            "rescue",
            (
                "B",
                "I keep ending up on the greyhound rescue website at midnight || I've been "
                "looking at the greyhound rescue in Hove again",
            ),
            (
                "A",
                "Do it. You've talked about getting a dog for two years || Just do it, you "
                "clearly want one",
            ),
            (
                "B",
                "The landlord finally said yes to pets last week || And my landlord said yes "
                "to a pet, so no excuses left",
            ),
        ),
        _b(
            0,
            "bookshop",
            (
                "A",
                "Another Saturday shift at Pagecraft Books, six hours restocking the cookery "
                "section || Pagecraft had me on the till all day again",
            ),
            ("B", "Still applying for design jobs? || Any luck with the design applications?"),
            (
                "A",
                "Sent two portfolios out this week. Nothing back yet || Two more portfolios "
                "sent. Silence so far",
            ),
            (
                "A",
                "Leeds has been grey for a fortnight, it's not helping || Also Leeds is grey "
                "and I'm losing my mind",
            ),
        ),
        _b(
            1,
            "biscuit",
            ("A", "So, did you go and meet the greyhound?? || Well?? Did you meet her?"),
            ("B", "We did. She's coming home on Saturday! || Yes, and she's coming home Saturday"),
            ("A", "Stop. What's her name || NAME. I need her name"),
            (
                "B",
                "Biscuit. She's four, an ex-racer and terrified of the hoover || Biscuit! "
                "Four years old, retired racer, scared of the hoover",
            ),
        ),
        _b(
            1,
            "signup",
            (
                "B",
                "Also I've signed up for the Bristol half marathon in September. Someone stop "
                "me || Entered the Bristol half in September, what have I done",
            ),
            ("A", "You ran one mile at Christmas and complained for a week"),
            (
                "B",
                "Which is why there's a sixteen-week plan taped to the fridge || Hence the "
                "training plan on the fridge",
            ),
        ),
        _b(
            2,
            "mot",
            (
                "B",
                "The Fiesta failed its MOT. Corroded brake pipes and a dodgy exhaust || My "
                "Fiesta failed the MOT, brake pipes are shot and the exhaust too",
            ),
            ("A", "Is it even worth fixing? || Oh no. Fixable?"),
            (
                "B",
                "The garage quoted £900 and it's worth about £600 || £900 to fix a £600 car, so no",
            ),
        ),
        _b(
            2,
            "interview",
            (
                "A",
                "Northlight Studio want to interview me! Thursday! || I've got an interview "
                "at Northlight Studio on Thursday",
            ),
            ("B", "The branding place you love? || The studio that did the museum posters?"),
            (
                "A",
                "That's the one. I'm taking my poster series for the city museum || Yes! I'm "
                "bringing my museum poster series",
            ),
        ),
        _b(
            3,
            "offer",
            ("B", "How did Thursday go? || Did you hear back from Thursday?"),
            (
                "A",
                "They offered me the junior designer role!! || I got it!! Junior designer, "
                "starting after Easter",
            ),
            ("B", "MAYA. Drinks are on me || Knew it. Drinks on me"),
        ),
        _b(
            3,
            "portuguese",
            (
                "A",
                "I've signed up for a Portuguese evening class, Tuesdays at the library || "
                "Portuguese classes start Tuesday at the library",
            ),
            ("B", "For the Lisbon trip? || Is this for Lisbon?"),
            (
                "A",
                "Yes, I refuse to only know how to say obrigada || Yep, I want to do more "
                "than point at menus",
            ),
        ),
        _b(
            4,
            "zoe",
            (
                "B",
                "Bought a car! A secondhand electric Renault Zoe || Went electric: a used "
                "Renault Zoe with 40k miles on it",
            ),
            ("A", "Look at you saving the planet || Very eco of you"),
            (
                "B",
                "Saving £900 on the Fiesta more like || Mostly saving myself the Fiesta "
                "repair bill",
            ),
        ),
        _b(
            4,
            "trainers",
            (
                "B",
                "Biscuit ate my running trainers. Just the left one || Biscuit chewed "
                "through one of my running shoes",
            ),
            ("A", "She has taste, those were ancient || Honestly they were due"),
            ("B", "They were my good ones! || Those were the expensive ones!"),
        ),
        _b(
            5,
            "knee",
            (
                "B",
                "My knee's been sore since the twelve mile run || Did a long run on Sunday "
                "and my knee's been sore all week",
            ),
            ("A", "Have you seen anyone about it? || Physio?"),
            (
                "B",
                "Physio says runner's knee. Three weeks off running, cycling only || Saw the "
                "physio: runner's knee, no running for three weeks, just the bike",
            ),
        ),
        _b(
            5,
            "firstweek",
            (
                "A",
                "First week at Northlight done. My brain is full || Survived week one at the "
                "studio",
            ),
            ("B", "Good full or bad full?"),
            (
                "A",
                "Good! They've already put me on a rebrand for a bakery chain || Good, I'm "
                "already on a bakery chain's rebrand",
            ),
        ),
        _b(
            6,
            "glasgow",
            (
                "A",
                "Big news: the studio is opening a Glasgow office and asked if I'd move up || "
                "Northlight want me in their new Glasgow office",
            ),
            ("B", "Would you go? || And? Are you going?"),
            (
                "A",
                "I think so. I've been flat hunting online all week || Probably! I've been "
                "on the flat websites every night",
            ),
        ),
        _b(
            7,
            "karaoke",
            (
                "B",
                "What are we doing for your birthday on the 14th? || Birthday plans for the 14th?",
            ),
            (
                "A",
                "Karaoke. Non-negotiable. I've booked a room at Lucky Voice for ten of us || "
                "Karaoke at Lucky Voice, room for ten, already booked",
            ),
            ("B", "I'm doing Total Eclipse of the Heart and you can't stop me"),
        ),
        _b(
            7,
            "lease",
            ("A", "I signed for a flat in Partick! || Signed the lease on a flat in Partick today"),
            ("B", "Is that a nice bit? || Where's that?"),
            (
                "A",
                "West end. Two rooms, a bay window, ten minutes from the subway || Two rooms "
                "and a bay window, near the subway",
            ),
        ),
        _b(
            8,
            "afterparty",
            (
                "B",
                "I can still hear your Dancing Queen || My ears are still ringing from your "
                "Dancing Queen",
            ),
            ("A", "My voice is gone. Worth it || Lost my voice. No regrets"),
            ("B", "Biscuit howled every time I practised my song at home, for the record"),
        ),
        _b(
            8,
            "movers",
            (
                "A",
                "Movers booked for the 1st of June. Packing my life into boxes || Moving day "
                "is June 1st, send help",
            ),
            ("B", "Need a hand with the van? || Want me to come up and lift things?"),
            (
                "A",
                "Yes please, Dad's driving it up but we need lifters || Please. Dad's "
                "driving, we need muscle",
            ),
        ),
        _b(
            9,
            "moved",
            ("A", "Officially living in Glasgow. Everything hurts || Moved! Everything aches"),
            ("B", "How's the flat? || And the new place?"),
            (
                "A",
                "The bay window is perfect for my drawing desk. The boiler sounds like a "
                "whale || Drawing desk fits in the bay window. Boiler makes whale noises",
            ),
        ),
        _b(
            9,
            "nights",
            (
                "B",
                "I've moved onto night shifts on the ward for the summer || I'm on nights at "
                "the Royal Infirmary from next week, all summer",
            ),
            ("A", "How will you ever see daylight? || Nights? All summer?"),
            (
                "B",
                "I won't. Biscuit is thrilled, I'm home with her all day || Biscuit loves it, "
                "she gets me at home all day",
            ),
        ),
        _b(
            10,
            "lisbon",
            ("A", "Back from Lisbon! || Home from Lisbon and already missing it"),
            ("B", "Did the Portuguese pay off? || Did the evening class help?"),
            (
                "A",
                "I ordered everything in Portuguese and they answered in English every time. "
                "Best pastel de nata was a tiny bakery in Alfama || Tried my Portuguese, "
                "everyone replied in English. Found the best pastel de nata in Alfama",
            ),
        ),
        _b(
            10,
            "speech",
            (
                "B",
                "Niamh's wedding in Cork is in two weeks and I haven't written the speech || "
                "Giving a speech at my sister Niamh's wedding in Cork, help",
            ),
            ("A", "Start with the caravan story || Tell the caravan story. Trust me"),
        ),
        _b(
            11,
            "wedding",
            (
                "B",
                "Survived the wedding. The speech got laughs in the right places || Wedding "
                "done, speech went down well",
            ),
            ("A", "Did you tell the caravan story? || Caravan story?"),
            (
                "B",
                "I did. Niamh cried, then threw a bread roll at me || Yes. She cried and "
                "then threw a bread roll at me",
            ),
        ),
        _b(
            12,
            "comeback",
            (
                "B",
                "Knee is fine now, I'm back up to ten miles || Ran ten miles pain-free yesterday",
            ),
            ("A", "Told you the cycling would work || See, the bike paid off"),
        ),
        _b(
            13,
            "museum",
            (
                "A",
                "I'm leading the Harbour Museum rebrand! My first project as lead || They've "
                "put me in charge of the Harbour Museum rebrand",
            ),
            ("B", "From junior to lead in four months? || Already leading things?"),
            (
                "A",
                "Lead on one project. Still junior on the payslip || Only that one project, "
                "the pay is still junior",
            ),
        ),
        _b(
            14,
            "charger",
            (
                "B",
                "Fought someone for the charger at work again || The car charger at work is "
                "always taken",
            ),
            ("A", "Can't you charge at home? || No charger at home?"),
            (
                "B",
                "Landlord won't let me put one in, so it's the supermarket on Sundays || Not "
                "allowed one at the flat, I charge at the supermarket on Sundays",
            ),
        ),
        _b(
            15,
            "finish",
            ("B", "1:58:40!! Under two hours! || Finished Bristol in 1:58!"),
            ("A", "TOM. You were hobbling in April! || You had a bad knee in April!"),
            (
                "B",
                "Biscuit was at the finish with my mum, wearing a bandana || Mum brought "
                "Biscuit to the finish line in a bandana",
            ),
        ),
        _b(
            15,
            "agility",
            (
                "B",
                "Biscuit passed her beginners' agility class, mostly by accident || Biscuit "
                "graduated from agility for beginners",
            ),
            ("A", "Two athletes in the family now || A certified athlete!"),
        ),
        _b(
            16,
            "days",
            (
                "B",
                "Back on day shifts from Monday, finally || Nights are over, I'm on days "
                "again from Monday",
            ),
            ("A", "Welcome back to the land of the living"),
        ),
        _b(
            16,
            "bus",
            (
                "A",
                "I think I actually love it here. People talk to you at bus stops || Glasgow "
                "has grown on me, strangers chat to you everywhere",
            ),
            ("B", "Even in the rain?"),
            ("A", "Especially in the rain, it's the only thing to talk about"),
        ),
    ),
    asks=(
        _q("single_hop", "Did Tom's landlord agree to him having a pet?", ("rescue", 2)),
        _q("single_hop", "Where was Maya working before she got the design job?", ("bookshop", 0)),
        _q("single_hop", "What's the name of the greyhound Tom adopted?", ("biscuit", 3)),
        _q("single_hop", "Which race did Tom sign up for?", ("signup", 0)),
        _q("single_hop", "Why did Tom's Fiesta fail the MOT?", ("mot", 0)),
        _q("single_hop", "What did Maya take to her Northlight interview?", ("interview", 2)),
        _q("single_hop", "What job did Northlight offer Maya?", ("offer", 1)),
        _q("single_hop", "What car did Tom get after the Fiesta?", ("zoe", 0)),
        _q("single_hop", "What did the physio say about Tom's knee?", ("knee", 2)),
        _q("single_hop", "Where did Maya have her birthday party?", ("karaoke", 1)),
        _q("single_hop", "Which part of Glasgow is Maya's flat in?", ("lease", 0)),
        _q("single_hop", "Where did Maya find the best pastel de nata?", ("lisbon", 2)),
        _q("single_hop", "What project is Maya leading at work?", ("museum", 0)),
        _q("single_hop", "Where does Tom charge his car?", ("charger", 2)),
        _q("single_hop", "What was Tom's time in the Bristol half?", ("finish", 0)),
        _q("single_hop", "Is Tom still working nights?", ("days", 0)),
        _q(
            "multi_hop",
            "Why did Tom replace his car, and what did he replace it with?",
            ("mot", 0),
            ("mot", 2),
            ("zoe", 0),
        ),
        _q(
            "multi_hop",
            "Did Maya's Portuguese class help her in Lisbon?",
            ("portuguese", 0),
            ("lisbon", 2),
        ),
        _q(
            "multi_hop",
            "Whose wedding did Tom give a speech at, and how did it go?",
            ("speech", 0),
            ("wedding", 0),
            ("wedding", 2),
        ),
        _q(
            "multi_hop",
            "Why did Maya move to Glasgow and where does she live there?",
            ("glasgow", 0),
            ("lease", 0),
        ),
        _q(
            "multi_hop",
            "What was Tom's half marathon time, and who was at the finish?",
            ("finish", 0),
            ("finish", 2),
        ),
        _q("temporal", "When did Tom bring Biscuit home?", ("biscuit", 1)),
        _q("temporal", "When was Maya's moving day?", ("movers", 0)),
        _q("temporal", "What happened with Tom's knee in April?", ("knee", 0), ("knee", 2)),
        _q("temporal", "What car was Tom driving in March?", ("mot", 0)),
        _q("temporal", "What was Maya busy with the week after her birthday?", ("movers", 0)),
        _q("temporal", "How was Tom's running going in July?", ("comeback", 0)),
        _q("temporal", "When did Maya start at Northlight?", ("firstweek", 0)),
        _q("open", "How does Maya feel about living in Glasgow?", ("bus", 0), ("bus", 2)),
        _q(
            "open",
            "How has Biscuit settled in with Tom?",
            ("trainers", 0),
            ("nights", 2),
            ("agility", 0),
        ),
        _q(
            "open",
            "How did Tom's half marathon training go?",
            ("knee", 2),
            ("comeback", 0),
            ("finish", 0),
        ),
        _q("open", "How has Maya's career gone this year?", ("offer", 1), ("museum", 0)),
    ),
)

LENA_OMAR = Chat(
    persona="chat_lena_omar",
    prefix="lo",
    a="Lena",
    b="Omar",
    description="Lena and Omar Haddad, sister and brother, chatting between Edinburgh and "
    "Bristol through 2026: a kitchen renovation, a PhD on coral, their mum's new hip, a band, "
    "a family trip to Crete.",
    sessions=(
        "2026-01-08",
        "2026-01-22",
        "2026-02-05",
        "2026-02-21",
        "2026-03-07",
        "2026-03-24",
        "2026-04-09",
        "2026-04-25",
        "2026-05-10",
        "2026-05-30",
        "2026-06-14",
        "2026-07-02",
        "2026-07-19",
        "2026-08-06",
        "2026-08-24",
        "2026-09-12",
    ),
    now="2026-09-25T18:00:00+00:00",
    beats=(
        _b(
            0,
            "skip",
            (
                "B",
                "We've finally started the kitchen. The old units are in a skip outside || "
                "Kitchen demolition done, the skip is full",
            ),
            ("A", "How long are you without a kitchen? || How long will it take?"),
            (
                "B",
                "Builder says six weeks. We're living on a microwave and a kettle in the "
                "lounge || Six weeks, says the builder. Microwave dinners in the lounge",
            ),
        ),
        _b(
            0,
            "hipdate",
            (
                "A",
                "Did Mum tell you? Hip replacement on the 3rd of March || Mum's hip op is "
                "booked for March 3rd",
            ),
            ("B", "At St James's? || Same hospital as Dad?"),
            (
                "A",
                "Yes, St James's. I'll fly down for the week after || Yes. I'm flying down "
                "for the week after",
            ),
        ),
        _b(
            1,
            "chapter",
            (
                "A",
                "Sent the coral bleaching chapter to Dr Ferris || Chapter three of the "
                "thesis is finally with my supervisor",
            ),
            ("B", "The one about the reef in Belize? || Is that the Belize reef one?"),
            (
                "A",
                "That one. Eighty pages of dying coral, very cheerful || Yep, eighty pages "
                "of bleached coral",
            ),
        ),
        _b(
            1,
            "school",
            (
                "B",
                "Zara got her school place! Hillside Primary, starting September || Zara's "
                "in at Hillside Primary for September",
            ),
            ("A", "Our tiny Zara at school?! || Nooo she's a baby"),
        ),
        _b(
            2,
            "stolen",
            (
                "A",
                "Someone stole my bike from outside the lab || My bike got nicked from the "
                "rack outside the lab",
            ),
            ("B", "Not the green one? || The green one?"),
            (
                "A",
                "The green Dawes. They cut straight through the lock || Yes, the green "
                "Dawes, lock cut clean through",
            ),
        ),
        _b(
            2,
            "fleece",
            (
                "B",
                "The band's playing the Fleece on the 20th! || We've got a gig at the Fleece "
                "on the 20th of February",
            ),
            ("A", "Still doing your Teardrop cover? || Are you doing Teardrop?"),
            ("B", "Slowed down, with Raj on cello || Yes, slower, Raj on cello"),
        ),
        _b(
            3,
            "gig",
            ("A", "How was the gig? || So? The gig?"),
            (
                "B",
                "Packed! We sold forty T-shirts and Raj broke a string in the first song || "
                "Rammed. Forty T-shirts sold, Raj snapped a string on song one",
            ),
            ("A", "Forty! Rock stars || Rock and roll"),
        ),
        _b(
            4,
            "surgery",
            (
                "A",
                "Mum's out of surgery. The surgeon says it went textbook || Op went fine, "
                "she's already bossing the nurses about",
            ),
            ("B", "Thank god. I'll drive up on Saturday || Phew. I'll come up Saturday"),
        ),
        _b(
            4,
            "trek",
            (
                "A",
                "Bought a new bike, a secondhand grey Trek, with two locks this time || "
                "Replaced the bike: grey Trek, two locks",
            ),
            ("B", "Two locks, wise || Smart"),
        ),
        _b(
            5,
            "cabinets",
            (
                "B",
                "The kitchen is DONE. Only three weeks late || We cooked in the new kitchen "
                "for the first time tonight",
            ),
            ("A", "Photos please! || Show me"),
            (
                "B",
                "Sage green cabinets and a butcher block worktop. Amira chose everything || "
                "Sage green units, wooden worktop, all Amira's choice",
            ),
        ),
        _b(
            6,
            "miso",
            (
                "A",
                "I adopted a cat! Miso, a grumpy orange tom from the shelter || Meet Miso, "
                "my new shelter cat. Orange, grumpy",
            ),
            ("B", "You said you'd never get a cat || You? A cat person?"),
            ("A", "I also said I'd never do a PhD"),
        ),
        _b(
            7,
            "tea",
            ("B", "I've quit coffee. Three weeks on green tea || Day twenty without coffee"),
            ("A", "Who are you || Are you ill?"),
            (
                "B",
                "The doctor said my blood pressure was high, so || GP said my blood "
                "pressure's up, so no more coffee",
            ),
        ),
        _b(
            8,
            "creteidea",
            (
                "A",
                "Should we do Crete in August with Mum? || Mum wants a family trip to Crete "
                "in August",
            ),
            (
                "B",
                "If her hip's up to it. Somewhere flat though || Only if the hip is ready, "
                "and somewhere without hills",
            ),
        ),
        _b(
            9,
            "deadline",
            (
                "A",
                "Submission date is set: 30th of September || Dr Ferris signed off my "
                "submission date, end of September",
            ),
            ("B", "Then it's Dr Lena || Dr Lena by October then"),
        ),
        _b(
            10,
            "drafts",
            (
                "A",
                "Miso has started sleeping on my thesis drafts. Literally on them || Miso "
                "sits on whatever chapter I'm editing",
            ),
            ("B", "Peer review || Harsh critic"),
        ),
        _b(
            10,
            "villa",
            (
                "B",
                "Booked the villa in Chania for the 10th to the 20th of August || Villa in "
                "Chania is booked, 10 to 20 August",
            ),
            ("A", "Ground floor for Mum? || Is it ground floor?"),
            ("B", "Ground floor, walk-in shower, I checked twice"),
        ),
        _b(
            11,
            "berlin",
            (
                "B",
                "Raj is leaving the band, he got a job in Berlin || We're losing our "
                "cellist, Raj is moving to Berlin for work",
            ),
            ("A", "Nooo. What about Teardrop?"),
            (
                "B",
                "We'll do it without cello. Or I learn cello || No cello from now on, unless "
                "I learn it",
            ),
        ),
        _b(
            12,
            "uniform",
            (
                "B",
                "Bought Zara's uniform. She insists on wearing it round the house || Zara "
                "has been wearing her Hillside jumper every day already",
            ),
            ("A", "Send a picture! || Pics immediately"),
        ),
        _b(
            13,
            "steps",
            (
                "A",
                "Mum did 5,000 steps today, she's so ready for Crete || Mum walked to the "
                "shops and back without the stick",
            ),
            ("B", "Told you. Titanium hip || Bionic Mum"),
        ),
        _b(
            14,
            "chania",
            (
                "B",
                "Back from Chania. Mum swam every single day || Crete was perfect. Mum was "
                "in the sea every morning",
            ),
            ("A", "Did Zara get burnt? || Zara survive the sun?"),
            (
                "B",
                "Only her nose. She made friends with the villa's cat || Just her nose, and "
                "she adopted the villa cat",
            ),
        ),
        _b(
            15,
            "firstday",
            (
                "B",
                "Zara's first day at Hillside! She didn't even look back || Dropped Zara at "
                "Hillside this morning, she ran off without a wave",
            ),
            ("A", "I'm crying at my desk || Stop, I'm crying"),
        ),
        _b(
            15,
            "printed",
            (
                "A",
                "Thesis printed and bound. 240 pages. Miso has already sat on it || The "
                "thesis is printed, all 240 pages",
            ),
            ("B", "Dr Lena in a week || Nearly there"),
        ),
    ),
    asks=(
        _q("single_hop", "How long did the builder say Omar's kitchen would take?", ("skip", 2)),
        _q("single_hop", "Which hospital was Mum's hip operation at?", ("hipdate", 2)),
        _q("single_hop", "What is Lena's thesis chapter about?", ("chapter", 0), ("chapter", 1)),
        _q("single_hop", "Which school is Zara going to?", ("school", 0)),
        _q("single_hop", "What happened to Lena's green bike?", ("stolen", 0)),
        _q("single_hop", "How many T-shirts did the band sell at the gig?", ("gig", 1)),
        _q("single_hop", "What bike does Lena ride now?", ("trek", 0)),
        _q("single_hop", "What colour are Omar's new kitchen cabinets?", ("cabinets", 2)),
        _q("single_hop", "What's Lena's cat called?", ("miso", 0)),
        _q("single_hop", "Why did Omar stop drinking coffee?", ("tea", 2)),
        _q("single_hop", "Where did the family stay in Crete?", ("villa", 0)),
        _q("single_hop", "Why is Raj leaving Omar's band?", ("berlin", 0)),
        _q("single_hop", "What does Miso do to Lena's thesis drafts?", ("drafts", 0)),
        _q(
            "multi_hop",
            "Where did Omar's band play in February, and what went wrong?",
            ("fleece", 0),
            ("gig", 1),
        ),
        _q(
            "multi_hop",
            "How did Mum's hip operation go, and when was it?",
            ("hipdate", 0),
            ("surgery", 0),
        ),
        _q(
            "multi_hop",
            "Which island did the family go to, and how did Mum manage there after "
            "her hip operation?",
            ("villa", 0),
            ("chania", 0),
        ),
        _q(
            "multi_hop",
            "What happened to Lena's bike and what did she replace it with?",
            ("stolen", 0),
            ("trek", 0),
        ),
        _q("temporal", "When was Mum's hip operation?", ("hipdate", 0)),
        _q("temporal", "When does Lena have to submit her thesis?", ("deadline", 0)),
        _q("temporal", "When did Zara start school?", ("firstday", 0)),
        _q("temporal", "What did Lena buy in March?", ("trek", 0)),
        _q(
            "temporal",
            "What was Omar saying about the kitchen back in January?",
            ("skip", 0),
            ("skip", 2),
        ),
        _q(
            "temporal",
            "What did Lena and Omar talk about doing in August?",
            ("creteidea", 0),
            ("villa", 0),
        ),
        _q("open", "How has Omar's band been doing this year?", ("gig", 1), ("berlin", 0)),
        _q("open", "How is Mum's recovery going?", ("surgery", 0), ("steps", 0), ("chania", 0)),
        _q("open", "How's Lena's PhD going?", ("chapter", 0), ("deadline", 0), ("printed", 0)),
        _q("open", "What is Zara like about starting school?", ("uniform", 0), ("firstday", 0)),
    ),
)

PRIYA_SAM = Chat(
    persona="chat_priya_sam",
    prefix="ps",
    a="Priya",
    b="Sam",
    description="Priya Nair and Sam Whitfield, former colleagues in Manchester, chatting "
    "through 2026: Priya's pottery business, Sam's redundancy and new job, an allotment, "
    "bouldering, Snowdon.",
    sessions=(
        "2026-03-05",
        "2026-03-19",
        "2026-04-02",
        "2026-04-18",
        "2026-05-03",
        "2026-05-17",
        "2026-06-04",
        "2026-06-21",
        "2026-07-08",
        "2026-07-26",
        "2026-08-15",
        "2026-09-02",
        "2026-09-20",
        "2026-10-11",
        "2026-11-01",
    ),
    now="2026-11-20T10:00:00+00:00",
    beats=(
        _b(
            0,
            "notice",
            (
                "A",
                "I've handed in my notice. I'm doing the pottery full time || Quit my job! "
                "Going full-time on the pottery",
            ),
            ("B", "Kiln and everything? || Whoa. Do you have a kiln?"),
            (
                "A",
                "A secondhand kiln arrives next week. It weighs as much as a car || Used kiln "
                "comes next week, it weighs a tonne",
            ),
        ),
        _b(
            0,
            "bouldering",
            (
                "B",
                "Alex dragged me to the bouldering wall and I'm hooked || Tried bouldering "
                "with Alex, my forearms are dead",
            ),
            ("A", "You? The man who takes the lift to the first floor?"),
        ),
        _b(
            1,
            "redundant",
            (
                "B",
                "Got made redundant today. The whole data team || They cut the whole data "
                "team today, me included",
            ),
            ("A", "Oh Sam, I'm so sorry || That's awful, I'm sorry"),
            (
                "B",
                "Three months' pay, so I'm not panicking yet || I get three months' pay, so "
                "it's ok for now",
            ),
        ),
        _b(
            2,
            "stall",
            (
                "A",
                "Hatch Market gave me a stall, first Saturday of every month || Got a stall "
                "at Hatch Market, first Saturdays",
            ),
            ("B", "What are you selling first? || What's going on the table?"),
            (
                "A",
                "Speckled mugs and those little ring dishes || Speckled mugs and tiny ring dishes",
            ),
        ),
        _b(
            3,
            "cracked",
            (
                "A",
                "Opened the kiln and every mug had cracked. Twelve of them || The kiln "
                "cracked a whole batch of mugs",
            ),
            ("B", "What happened? || Why??"),
            ("A", "I rushed the cooling. Expensive lesson || Cooled it too fast, lesson learned"),
        ),
        _b(
            4,
            "round2",
            (
                "B",
                "Fernbank want me back for a second interview on Thursday || Second "
                "interview at Fernbank, the fintech, on Thursday",
            ),
            (
                "A",
                "The one with the dog-friendly office? || Is that the place with the office dogs?",
            ),
        ),
        _b(
            5,
            "fernbank",
            (
                "B",
                "Fernbank offered! Senior analyst, starting in June || I got the Fernbank "
                "job, senior analyst from June",
            ),
            (
                "A",
                "SAM! See, the redundancy was a blessing || Told you something better would come",
            ),
        ),
        _b(
            6,
            "plot",
            (
                "A",
                "Got an allotment off the waiting list after two years || Allotment plot 14 "
                "is mine at last",
            ),
            ("B", "What are you growing? || What's going in?"),
            (
                "A",
                "Courgettes, far too many courgettes, and dahlias for the stall || Dahlias "
                "for the stall and a ridiculous number of courgettes",
            ),
        ),
        _b(
            7,
            "snowdonplan",
            (
                "B",
                "Alex and I are doing Snowdon at the start of August, want to come? || "
                "Snowdon, first weekend of August, you in?",
            ),
            (
                "A",
                "If we take the Pyg Track and not the scary ridge || Only the Pyg Track, no ridges",
            ),
        ),
        _b(
            8,
            "m6",
            (
                "A",
                "The van broke down on the M6 with all my stock in it || Van died on the M6 "
                "on the way to the Manchester craft fair",
            ),
            ("B", "Did you make the fair? || Did you get there?"),
            (
                "A",
                "Tow truck, two hours late, and I still sold out || Two hours late after the "
                "tow, sold out anyway",
            ),
        ),
        _b(
            9,
            "stockport",
            (
                "B",
                "Alex and I are moving in together! We found a place in Stockport || We've "
                "got a flat in Stockport, me and Alex",
            ),
            ("A", "About time, you've basically lived there for a year"),
        ),
        _b(
            10,
            "summit",
            (
                "B",
                "We did Snowdon! The summit was in cloud, we saw absolutely nothing || Top of "
                "Snowdon was pure fog",
            ),
            ("A", "We did see a goat, remember"),
            ("B", "The goat was the highlight"),
        ),
        _b(
            11,
            "hebden",
            (
                "A",
                "A shop in Hebden Bridge wants to stock my mugs! Forty to start || Wholesale "
                "order from a shop in Hebden Bridge, 40 mugs",
            ),
            ("B", "Wholesale! A proper business || Look at you going wholesale"),
        ),
        _b(
            12,
            "v4",
            (
                "B",
                "Sent my first V4 at the wall today || Finally got a V4 problem at the "
                "climbing wall",
            ),
            ("A", "I don't know what that means but I'm proud"),
        ),
        _b(
            13,
            "secondkiln",
            (
                "A",
                "Bought a bigger kiln with the Hebden money || The wholesale money paid for a "
                "second kiln",
            ),
            ("B", "Two kilns. An empire"),
        ),
        _b(
            14,
            "payments",
            (
                "B",
                "Passed probation at Fernbank and they've moved me to the payments team || "
                "Probation done, I'm on the payments team now",
            ),
            ("A", "Look at you, a proper grown-up"),
        ),
    ),
    asks=(
        _q("single_hop", "What did Priya quit her job to do?", ("notice", 0)),
        _q("single_hop", "Who got Sam into bouldering?", ("bouldering", 0)),
        _q("single_hop", "What does Priya sell at her market stall?", ("stall", 2)),
        _q("single_hop", "Why did Priya's mugs crack in the kiln?", ("cracked", 2)),
        _q("single_hop", "What job did Sam get at Fernbank?", ("fernbank", 0)),
        _q("single_hop", "What is Priya growing on her allotment?", ("plot", 2)),
        _q("single_hop", "Where did Priya's van break down?", ("m6", 0)),
        _q("single_hop", "Where are Sam and Alex living together?", ("stockport", 0)),
        _q("single_hop", "Which shop ordered Priya's mugs wholesale?", ("hebden", 0)),
        _q("single_hop", "Which team is Sam on at Fernbank now?", ("payments", 0)),
        _q("single_hop", "What did Priya buy with the wholesale money?", ("secondkiln", 0)),
        _q(
            "multi_hop",
            "Which route did Priya want up Snowdon, and what was the view like at the top?",
            ("snowdonplan", 1),
            ("summit", 0),
        ),
        _q(
            "multi_hop",
            "How did Sam go from redundancy to a new job?",
            ("redundant", 0),
            ("fernbank", 0),
        ),
        _q(
            "multi_hop",
            "Did Priya make it to the craft fair after the breakdown, and how did it go?",
            ("m6", 0),
            ("m6", 2),
        ),
        _q("temporal", "What happened to Sam's job in March?", ("redundant", 0)),
        _q("temporal", "What went wrong with the kiln in April?", ("cracked", 0), ("cracked", 2)),
        _q("temporal", "When did Priya get her allotment?", ("plot", 0)),
        _q("temporal", "When did Sam and Alex climb Snowdon?", ("summit", 0)),
        _q("temporal", "What happened on the way to the craft fair in July?", ("m6", 0)),
        _q("temporal", "What did Sam tell Priya about moving in late July?", ("stockport", 0)),
        _q(
            "open",
            "How is Priya's pottery business doing?",
            ("stall", 0),
            ("hebden", 0),
            ("secondkiln", 0),
        ),
        _q("open", "How has Sam's year been?", ("redundant", 0), ("fernbank", 0), ("stockport", 0)),
        _q("open", "How is Sam getting on with climbing?", ("bouldering", 0), ("v4", 0)),
    ),
)

CHATS = (MAYA_TOM, LENA_OMAR, PRIYA_SAM)
MATCH = {"single_hop": "any", "temporal": "any", "multi_hop": "all", "open": "all"}


def generate(chat: Chat) -> dict[str, Any]:
    """The corpus file for ``chat``: every turn an episodic memory, the questions with their
    evidence keys and a dev/test split."""
    rng = rng_for(chat.persona)
    names = {"A": chat.a, "B": chat.b}
    fillers = list(small_talk.FILLERS)
    rng.shuffle(fillers)
    memories: list[dict[str, Any]] = []
    where: dict[Ref, str] = {}
    for index, day in enumerate(chat.sessions):
        moment = datetime.fromisoformat(
            f"{day}T{rng.randint(8, 21):02d}:{rng.randint(0, 59):02d}:00{chat.offset}"
        )
        session_id = f"{chat.prefix}-s{index + 1:02d}"
        exchanges = _session(rng, chat, index, fillers)
        for tag, lines, x in exchanges:
            for n, (role, text) in enumerate(lines):
                speaker = role if tag is not None else (x if role == "X" else _other(x))
                key = f"{chat.prefix}-ep-{len(memories) + 1:04d}"
                memories.append(
                    {
                        "key": key,
                        "type": "episodic",
                        "text": fill(pick(rng, text), _slots(rng)),
                        "timestamp": _stamp(moment),
                        "session": session_id,
                        "speaker": names[speaker],
                    }
                )
                if tag is not None:
                    where[(tag, n)] = key
                moment += minutes(rng, 0, 3) + timedelta(seconds=rng.randint(5, 50))
    questions = []
    for n, ask in enumerate(chat.asks, start=1):
        questions.append(
            {
                "id": f"{chat.prefix}-q-{n:03d}",
                "question": ask.text,
                "targets": [where[ref] for ref in dict.fromkeys(ask.evidence)],
                "kind": ask.kind,
                "match": MATCH[ask.kind],
            }
        )
    balanced_splits(questions)
    return {
        "persona": chat.persona,
        "corpus": "conversations",
        "display_name": f"{chat.a} and {chat.b}",
        "description": chat.description,
        "now": chat.now,
        "memories": memories,
        "questions": questions,
    }


def _other(role: str) -> str:
    return "B" if role == "A" else "A"


def _stamp(moment: datetime) -> str:
    return iso(moment)


def _slots(rng: random.Random) -> dict[str, str]:
    return {
        "show": rng.choice(small_talk.SHOWS),
        "food": rng.choice(small_talk.FOODS),
        "thing": rng.choice(small_talk.THINGS),
        "weekday": rng.choice(small_talk.WEEKDAYS),
        "place": rng.choice(small_talk.PLACES),
    }


def _session(
    rng: random.Random, chat: Chat, index: int, fillers: list[list[tuple[str, str]]]
) -> list[tuple[str | None, tuple[Line, ...], str]]:
    """One session: an opener, the session's beats among 4-6 small-talk exchanges, a closer.
    Each entry is (beat tag or None, lines, who opens a small-talk exchange)."""
    beats = [b for b in chat.beats if b.session == index]
    count = rng.randint(5, 7)
    small = [fillers[(index * 7 + n) % len(fillers)] for n in range(count)]
    body: list[tuple[str | None, tuple[Line, ...], str]] = [
        (None, tuple(s), rng.choice("AB")) for s in small
    ]
    for beat in beats:
        body.insert(rng.randint(0, len(body)), (beat.tag, beat.lines, "A"))
    opener = (None, tuple(rng.choice(small_talk.OPENERS)), rng.choice("AB"))
    closer = (None, tuple(rng.choice(small_talk.CLOSERS)), rng.choice("AB"))
    return [opener, *body, closer]
