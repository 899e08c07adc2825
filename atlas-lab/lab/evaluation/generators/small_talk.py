"""Hand-written small talk that fills the chat sessions around the facts (``conversations.py``).

Each exchange is a list of ``(speaker, line)``: ``X`` opens, ``Y`` answers (either person may
be X). A line holds ``||``-separated phrasings; ``{show}``, ``{food}``, ``{thing}``,
``{weekday}`` and ``{place}`` are filled from the lists below. Some exchanges use the words the
questions use (dogs, running, work, flats, trips) without the facts, as real chats do.
"""

from __future__ import annotations

SHOWS = (
    "the new detective thing on BBC",
    "that baking show",
    "the Danish crime drama",
    "the documentary about octopuses",
    "the one with the lighthouse keeper",
    "the quiz show with the grumpy host",
)
FOODS = (
    "a massive lasagne",
    "leftover curry",
    "beans on toast",
    "a very sad salad",
    "homemade ramen",
    "fish finger sandwiches",
    "a stir fry that went wrong",
)
THINGS = (
    "the washing machine",
    "my phone screen",
    "the boiler",
    "the Wi-Fi",
    "my umbrella",
    "the bathroom tap",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
PLACES = ("the park", "the high street", "the big Tesco", "the canal", "the library")

OPENERS = (
    [("X", "Morning! || Hiya || Hey you || Hello hello"), ("Y", "Hey! || Morning :) || Hi!")],
    [("X", "You around? || Got a sec? || Are you busy?"), ("Y", "Yep, go || Always, what's up")],
    [("X", "Sorry I went quiet this week || Sorry for the radio silence"), ("Y", "No worries")],
    [("X", "How's your {weekday} going? || Surviving {weekday}?"), ("Y", "Slowly || Barely")],
)
CLOSERS = (
    [("X", "Right, I'd better go || Anyway, got to run"), ("Y", "Speak soon x || Later!")],
    [("X", "Night! || Off to bed, night"), ("Y", "Night night || Sleep well")],
    [("X", "Talk at the weekend? || Catch up properly soon?"), ("Y", "Definitely || Deal")],
    [("X", "ok dinner's ready, bye || Food's here, bye!"), ("Y", "Enjoy!")],
)
FILLERS = (
    [
        ("X", "It has not stopped raining here all day || The rain today is biblical"),
        ("Y", "Same here. I gave up and stayed in || Don't. My socks are still wet"),
    ],
    [
        ("X", "Have you watched {show} yet? || Started {show} last night"),
        ("Y", "Two episodes in, no spoilers! || Not yet, is it good?"),
        ("X", "So good. The ending of episode three though || Worth it, trust me"),
    ],
    [
        ("X", "What are you having for tea? || Dinner plans?"),
        ("Y", "{food}, don't judge || Probably {food}"),
        ("X", "Honestly sounds great || Living the dream"),
    ],
    [
        ("X", "{thing} has died again || Guess what's broken. {thing}"),
        ("Y", "Nooo. Again? || Classic"),
        ("X", "Third time this year || I'm going to throw it out of the window"),
    ],
    [
        ("X", "I'm so tired today || Didn't sleep at all last night"),
        ("Y", "Coffee. Lots of it || Nap at lunch, it's the only way"),
    ],
    [
        ("X", "Any plans for the weekend? || What are you up to this weekend?"),
        ("Y", "Absolutely nothing and I can't wait || Might go down to {place}, that's it"),
        ("X", "Sounds perfect || Jealous"),
    ],
    [
        ("X", "Saw a dog in a raincoat outside {place} and thought of you"),
        ("Y", "Was it a yellow raincoat || Honestly the best thing"),
        ("X", "Yellow with a hood. Tiny wellies too || Hood and everything"),
    ],
    [
        ("X", "Did you see the news about the trains? || Train strike again next week apparently"),
        ("Y", "Don't get me started || I'll be working from home then"),
    ],
    [
        ("X", "My mum has discovered voice notes. I get seven a day || Mum sends voice notes now"),
        (
            "Y",
            "Mine does that, each one is four minutes long || Ha, they all discover them at once",
        ),
    ],
    [
        ("X", "Work was a lot today || Long day at work"),
        ("Y", "Want to vent? || Oh no, what happened?"),
        ("X", "Just meetings about meetings. I'll live || Nothing dramatic, just endless emails"),
    ],
    [
        ("X", "I went for a run this morning and regretted everything || Tried a run, lasted 2k"),
        ("Y", "That still counts! || Better than me, I stayed in bed"),
    ],
    [
        ("X", "I've been looking at flights for no reason || Fancy a holiday somewhere hot"),
        ("Y", "Same. Anywhere with sun || Do it, book something"),
        ("X", "Maybe once payday happens || Looking, not booking. Yet"),
    ],
    [
        ("X", "Listening to that podcast you sent || Finally started the podcast you recommended"),
        ("Y", "The history one? || Told you!"),
        ("X", "Yes, I'm on episode five, hooked || I keep walking the long way home to finish it"),
    ],
    [
        ("X", "My neighbour is drilling again || The neighbours are renovating AGAIN"),
        ("Y", "What are they even building || At 8am on a Saturday?"),
    ],
    [
        ("X", "Random question but do you still have my Tupperware || You still have my lunchbox"),
        ("Y", "...maybe || Which one?"),
        ("X", "Ha. Keep it || The blue one. I want it back"),
    ],
    [
        ("X", "I cooked {food} and it was actually good || Made {food} from scratch"),
        ("Y", "Look at you, chef || Photo or it didn't happen"),
    ],
    [
        ("X", "Do you think it's too early to put the heating on || Heating on already?"),
        ("Y", "Never too early || Jumper first, heating later"),
    ],
    [
        (
            "X",
            "Went to {place} and bumped into someone from school || Saw our old teacher at {place}",
        ),
        ("Y", "No way, who? || Did they recognise you?"),
        ("X", "Took a minute but yes || Eventually, it was awkward"),
    ],
    [
        ("X", "Happy Friday! || It's nearly the weekend"),
        ("Y", "Finally || Best words in English"),
    ],
    [
        ("X", "I need a new pair of trainers, any tips || Shopping for shoes, help"),
        ("Y", "Go to a proper shop and try them on || Whatever's comfy, ignore the colours"),
    ],
    [
        ("X", "The flat is freezing tonight || Sitting in two jumpers and a blanket"),
        ("Y", "Hot water bottle time || Same, it's arctic"),
    ],
    [
        ("X", "lol || haha"),
        ("Y", "I know right || :D"),
    ],
    [
        ("X", "I've got a dentist appointment tomorrow, dreading it || Dentist tomorrow, ugh"),
        ("Y", "You'll be fine || Good luck, treat yourself after"),
    ],
    [
        ("X", "Just found twenty quid in an old coat || Found money in my jeans pocket"),
        ("Y", "Best feeling || The universe provides"),
    ],
    [
        ("X", "Can't believe it's {weekday} already || Where has this week gone"),
        ("Y", "The weeks are flying || Honestly no idea"),
    ],
    [
        ("X", "Reading anything good? || Need a book recommendation"),
        ("Y", "Piranesi, if you haven't || Anything by Ann Patchett"),
        ("X", "Adding it to the pile || Ooh ok, thanks"),
    ],
    [
        ("X", "I think I'm coming down with something || Throat's scratchy, please no"),
        ("Y", "Honey and lemon, early night || Rest! Don't be a hero"),
    ],
)
