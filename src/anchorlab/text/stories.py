"""Short stories for the real-language runs: TinyStories loaders, a seeded stand-in, and corpus statistics.

Sources (:func:`load_stories` picks one from a string):

* a local file: ``.txt`` (stories separated by ``<|endoftext|>`` lines, as the TinyStories ``.txt`` files),
  ``.jsonl`` (one JSON object per line, the story in field ``"text"`` or another named field),
  ``.parquet`` (a ``"text"`` column; needs pyarrow, the ``[parquet]`` extra);
* ``"hf"``: ``roneneldan/TinyStories`` through Hugging Face ``datasets`` (the ``[datasets]`` extra) when
  online. Offline it raises at once (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE set, or the hub not reachable
  within 3 s): it never hangs;
* ``"standin"``: :func:`generate_standin`, **a stand-in, not TinyStories**: seeded simple stories from
  templates and word lists (characters, settings, objects, problems, dialogue, endings), meant only to let
  everything run offline. How its statistics differ from the real sample is measured in docs/text.md.

The real 754-story sample lives outside the repository (its licence forbids copying it in);
:func:`sample_path` finds it through ``ANCHORLAB_TINYSTORIES``; without it, in a
``shared/data/tinystories-sample`` directory beside the repository's own (the development machines' layout).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import socket
import statistics
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

SEPARATOR = "<|endoftext|>"
HF_DATASET = "roneneldan/TinyStories"
SAMPLE_ENV = "ANCHORLAB_TINYSTORIES"
_REPO_ROOT = Path(__file__).resolve().parents[3]


class StoriesUnavailable(RuntimeError):
    """A story source cannot be read here (offline, missing extra, missing file)."""


# --------------------------------------------------------------------------------------------------
# Loaders


def sample_path() -> Path:
    """The real TinyStories sample directory: ``$ANCHORLAB_TINYSTORIES``, else ``shared/data/tinystories-sample``
    beside the repository."""
    env = os.environ.get(SAMPLE_ENV)
    return Path(env) if env else _REPO_ROOT.parent / "shared" / "data" / "tinystories-sample"


def load_txt(path: str | Path) -> list[str]:
    """Stories of a ``.txt`` file, split at lines holding ``<|endoftext|>``; blank pieces dropped."""
    text = Path(path).read_text(encoding="utf-8")
    pieces = re.split(r"\n?" + re.escape(SEPARATOR) + r"\n?", text)
    return [p.strip("\n") for p in pieces if p.strip()]


def load_jsonl(path: str | Path, field: str = "text") -> list[str]:
    """The ``field`` of every JSON line (blank lines skipped)."""
    stories = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            if field not in record:
                raise KeyError(f"{path}:{i}: no field {field!r} (fields: {sorted(record)})")
            stories.append(record[field])
    return stories


def load_parquet(path: str | Path, field: str = "text") -> list[str]:
    """The ``field`` column of a parquet file (TinyStories' HF parquet shards use ``"text"``)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise StoriesUnavailable("reading .parquet needs pyarrow: pip install 'anchorlab[parquet]'") from None
    table = pq.read_table(path, columns=[field])
    return [s for s in table.column(field).to_pylist() if s]


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the hub (``HF_ENDPOINT``'s host, default huggingface.co) opens in time."""
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def load_hf(split: str = "train", n: int | None = None, dataset: str = HF_DATASET) -> list[str]:
    """The first ``n`` stories of a split of ``roneneldan/TinyStories``, online only (fails fast offline)."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on"):
            raise StoriesUnavailable(f"{dataset}: {var} is set, so the hub is not used; load a local .txt/.jsonl/"
                                     f".parquet copy or use 'standin'")
    try:
        import datasets
    except ImportError:
        raise StoriesUnavailable(f"{dataset} needs Hugging Face datasets: pip install 'anchorlab[datasets]'") from None
    if not _hub_reachable():
        raise StoriesUnavailable(f"{dataset}: huggingface.co is not reachable (offline?); load a local copy "
                                 f"(.txt/.jsonl/.parquet) or use 'standin'")
    ds = datasets.load_dataset(dataset, split=split if n is None else f"{split}[:{n}]")
    return [row["text"] for row in ds]


STORY_FILES = (".txt", ".jsonl", ".parquet")  # the file types load_stories reads


def story_file(source: str | Path) -> Path:
    """The file a stories path names (a directory: its ``stories.txt``); one that is not there, or of a type
    no loader reads, is a :class:`StoriesUnavailable` naming it and what a source may be."""
    path = Path(source)
    if path.is_dir():
        path = path / "stories.txt"
    if not path.is_file() or path.suffix not in STORY_FILES:
        what = "not found" if not path.is_file() else f"is a {path.suffix or 'suffix-less'} file, which no loader reads"
        raise StoriesUnavailable(f"{path} {what}; allowed sources are 'standin', 'sample', 'hf', a "
                                 f"{' / '.join(STORY_FILES)} file or a directory holding stories.txt")
    return path


def load_stories(source: str | Path, n: int | None = None, seed: int = 0, field: str = "text") -> list[str]:
    """Stories from ``source``: a .txt/.jsonl/.parquet path, a directory holding ``stories.txt``,
    ``"hf"`` (TinyStories train split from the hub) or ``"standin"`` (``n`` generated stories, ``seed``)."""
    if str(source) == "standin":
        return generate_standin(1000 if n is None else n, seed)
    if str(source) == "hf":
        return load_hf(n=n)
    path = story_file(source)
    loaders = {".txt": load_txt, ".jsonl": lambda p: load_jsonl(p, field), ".parquet": lambda p: load_parquet(p, field)}
    stories = loaders[path.suffix](path)
    return stories if n is None else stories[:n]


# --------------------------------------------------------------------------------------------------
# Stand-in generator (NOT TinyStories: templates + word lists, for offline runs)

_GIRLS = ("Lily", "Mia", "Sue", "Anna", "Emma", "Lucy", "Sara", "Zoe", "Ella", "Amy", "Rosie", "Kate", "Jenny",
          "Molly", "Daisy", "Ruby", "Chloe", "Grace", "Hannah", "Ivy", "Nora", "Poppy", "Tina", "Wendy")
_BOYS = ("Tom", "Ben", "Max", "Sam", "Tim", "Jack", "Leo", "Joe", "Finn", "Jake", "Bob", "Danny", "Eli", "Henry",
         "Kevin", "Luke", "Noah", "Oscar", "Peter", "Ryan", "Toby", "Will", "Zack", "Adam")
_ANIMALS = (("cat", "Whiskers"), ("dog", "Spot"), ("bunny", "Hoppy"), ("bird", "Tweety"), ("frog", "Ribbit"),
            ("bear", "Fuzzy"), ("duck", "Quack"), ("fox", "Rusty"), ("mouse", "Squeak"), ("fish", "Bubbles"),
            ("owl", "Hoot"), ("puppy", "Buddy"), ("kitten", "Mittens"), ("turtle", "Shelly"), ("lion", "Roary"),
            ("monkey", "Coco"), ("pig", "Pinky"), ("squirrel", "Nutty"), ("horse", "Star"), ("bee", "Buzzy"),
            ("elephant", "Ellie"), ("butterfly", "Flutter"), ("ladybug", "Dot"), ("snail", "Slowpoke"),
            ("goat", "Billy"), ("deer", "Dash"), ("penguin", "Pip"), ("dragon", "Sparky"), ("giraffe", "Stretch"),
            ("hen", "Henny"), ("zebra", "Stripes"), ("whale", "Splashy"), ("crab", "Pinchy"), ("sheep", "Woolly"),
            ("raccoon", "Bandit"), ("hedgehog", "Prickles"))
_THINGS = (("car", "Beep"), ("truck", "Vroom"), ("train", "Choo"), ("robot", "Bolt"), ("boat", "Splash"),
           ("plane", "Zoom"), ("balloon", "Puff"), ("toy", "Teddy"))
_ADJ_CHAR = ("little", "happy", "kind", "brave", "curious", "shy", "silly", "friendly", "small", "clever", "gentle",
             "playful", "lonely", "proud", "busy", "sleepy", "cheerful", "tiny", "young", "funny", "careful",
             "honest", "grumpy", "helpful",
             "polite", "lazy", "smart", "quiet", "loud", "strong", "fast", "slow", "bossy", "caring", "happy-go-lucky",
             "wise", "naughty", "excited", "hungry", "bored")
_ADJ_THING = ("big", "red", "shiny", "soft", "blue", "old", "new", "pretty", "round", "yellow", "green", "tiny",
              "fluffy", "bright", "heavy", "colorful", "smooth", "sparkly", "purple", "warm", "special", "strange",
              "golden", "striped", "wooden", "fancy",
              "tall", "long", "dirty", "clean", "broken", "magic", "fuzzy", "sticky", "cold", "pink", "white", "black",
              "little", "gentle", "noisy", "giant", "bumpy", "cozy", "lovely")
_OBJECTS = ("ball", "kite", "hat", "box", "book", "cup", "drum", "doll", "flower", "stone", "shell", "key", "bell",
            "spoon", "blanket", "crayon", "puzzle", "rope", "jar", "leaf", "feather", "ribbon", "sock", "map",
            "toy car", "necklace", "basket", "bucket", "button", "candle", "cookie", "apple", "banana", "cake",
            "pencil", "whistle", "mirror", "umbrella", "scarf", "coin", "block", "bone", "carrot", "sandwich",
            "teddy bear", "boat", "sticker", "lamp", "seed", "ring",
            "hammer", "brush", "shoe", "paper", "bottle", "star", "clock", "pillow", "tent", "wagon", "sled", "shovel",
            "bowl", "treasure", "backpack", "glove", "jacket", "ladder", "net", "tire", "rock", "crown", "wand", "flag",
            "puppet", "trumpet", "guitar", "picture", "letter", "gift", "pie", "bike", "swing", "bag", "marble",
            "piano", "sandcastle", "snowman", "toothbrush", "towel", "fork", "bench", "nest", "pumpkin", "seashell",
            "lollipop", "cupcake", "helmet", "rocket", "train set")
_PLACES = ("park", "garden", "forest", "beach", "farm", "pond", "playground", "kitchen", "backyard", "meadow",
           "zoo", "school", "river", "hill", "market", "library", "jungle", "lake", "field", "house", "cave",
           "store", "town", "yard", "castle", "barn", "shop", "street", "sky", "sea",
           "mountain", "island", "city", "village", "bakery", "museum", "hospital", "pool", "attic", "bedroom",
           "classroom", "desert", "station", "harbor", "orchard", "swamp", "tree house", "circus", "farmhouse",
           "bathroom")
_PLAYMATES = ("mom", "dad", "friend", "sister", "brother", "grandma", "grandpa", "teacher", "neighbor", "aunt",
              "uncle", "best friend")
_ACTIVITIES = ("play outside", "run in the grass", "jump in puddles", "sing songs", "draw pictures",
               "read books", "dance", "climb trees", "swim", "build things", "look at the stars", "bake cookies",
               "help others", "play hide and seek", "go fast", "explore", "pick flowers", "fly high",
               "play with toys", "dig in the sand", "paint", "ride a bike", "watch the clouds", "chase butterflies",
               "splash in the water", "make new friends", "tell jokes", "eat treats",
               "fly a kite", "build sandcastles", "feed the ducks", "play the drum", "count the stars",
               "collect shells", "plant seeds", "make a fort", "play catch", "roll down the hill", "splash in the pond",
               "go to the store", "visit the zoo", "skip rocks", "look for bugs", "play pretend", "make music")
_FEELINGS = ("happy", "sad", "scared", "excited", "angry", "surprised", "worried", "proud", "tired", "glad",
             "upset", "curious", "brave", "calm", "silly", "sorry", "thankful", "lonely", "jolly", "nervous")
_WEATHER = ("sunny", "rainy", "windy", "cold", "warm", "cloudy", "snowy", "bright", "hot", "quiet")
_TIMES = ("One day", "One morning", "One sunny day", "One evening", "Later that day", "The next day",
          "One afternoon", "One rainy day", "One night", "After lunch")
_ENDINGS = ("From that day on, {name} always {lesson}.",
            "{name} learned that it is good to {moral}.",
            "And they all lived happily ever after.",
            "{name} smiled. It was the best day ever.",
            "They played together until the sun went down.",
            "{Pron} went home {feeling} and tired, and slept well that night.",
            "Now {name} and the {friend} are best friends.",
            "The end.")
_SIGHTS = ("tall trees", "pretty flowers", "a little stream", "big rocks", "green grass", "busy ants",
           "white clouds", "a rainbow", "red apples", "bright lights", "soft sand", "tall grass", "a wooden fence",
           "a big slide", "colorful birds", "a shiny puddle", "an old bridge", "yellow leaves", "a tiny nest",
           "many boats", "a funny scarecrow", "sweet berries", "a sleepy cow", "buzzing bees", "a long path",
           "a happy farmer", "a big swing", "orange pumpkins", "a dark hole", "a pile of snow",
           "a big castle", "purple grapes", "a shiny car", "a sleepy cat", "a row of houses", "a blue lake",
           "a tall tower", "a red barn", "a field of corn", "a quiet road", "fluffy sheep", "a small boat",
           "a crowd of people", "a big moon", "twinkling stars", "a pile of leaves", "a muddy puddle", "a funny clown",
           "a little shop", "green hills")
_SOUNDS = ("birds singing", "the wind whistling", "water splashing", "leaves rustling", "children laughing",
           "a dog barking", "a bell ringing", "frogs croaking", "rain tapping", "a drum beating")
_FOODS = ("cookies", "apples", "soup", "bread", "cake", "ice cream", "carrots", "berries", "pie", "milk",
          "cheese", "candy", "pancakes", "grapes", "juice", "muffins", "peas", "noodles", "honey", "popcorn",
          "pizza", "eggs", "rice", "oranges", "pears", "soup and bread", "chocolate", "lemonade", "corn", "peaches",
          "toast", "jam", "beans", "watermelon", "sandwiches")
_ACTIONS = ("jumped up and down", "ran around in circles", "clapped {poss} hands", "spun around",
            "hummed a little song", "skipped along the path", "rolled in the grass", "waved to everyone",
            "giggled", "looked all around", "took a deep breath", "sat down to rest", "danced a silly dance",
            "made a wish")
_MORALS = (("share with friends", "shared {poss} toys"), ("tell the truth", "told the truth"),
           ("be kind to others", "was kind to others"), ("say sorry", "said sorry when {pron} was wrong"),
           ("be careful", "was careful"), ("ask for help", "asked for help when {pron} needed it"),
           ("try new things", "tried new things"), ("listen to {poss} mom", "listened to {poss} mom"),
           ("be brave", "tried to be brave"), ("help a friend", "helped {poss} friends"),
           ("keep trying", "kept trying"), ("clean up", "cleaned up after playing"))


def _pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" or word.startswith("honest") else "a ") + word


def _character(rng: random.Random) -> dict[str, str]:
    kind = rng.random()
    if kind < 0.5:
        girl = rng.random() < 0.5
        name = _pick(rng, _GIRLS if girl else _BOYS)
        noun = "girl" if girl else "boy"
        pron, poss, obj = ("she", "her", "her") if girl else ("he", "his", "him")
    else:
        noun, name = _pick(rng, _ANIMALS if kind < 0.85 else _THINGS)
        pron, poss, obj = rng.choice((("she", "her", "her"), ("he", "his", "him")))
    return {"name": name, "noun": noun, "pron": pron, "Pron": pron.capitalize(), "poss": poss, "obj": obj}


def _say(rng: random.Random, speaker: str, line: str) -> str:
    verb = _pick(rng, ("said", "shouted", "whispered", "cried", "replied", "laughed"))
    if line.endswith("?"):
        verb = "asked"
    if rng.random() < 0.6:
        return f'{speaker} {verb}, "{line}"'
    speaker = speaker[0].lower() + speaker[1:] if speaker.split()[0] in ("The", "His", "Her") else speaker
    return f'"{line}" {speaker} {verb}.'


def standin_story(rng: random.Random) -> str:
    """One stand-in story: opening, setting, a wish or problem with dialogue, a resolution, an ending."""
    c = _character(rng)
    name, pron, Pron, poss = c["name"], c["pron"], c["Pron"], c["poss"]
    friend_noun, friend_name = _pick(rng, _ANIMALS)
    friend = rng.choice((f"{friend_noun} named {friend_name}", f"{_pick(rng, _ADJ_CHAR)} {friend_noun}"))
    place, place2 = rng.sample(_PLACES, 2)
    obj_adj, obj = _pick(rng, _ADJ_THING), _pick(rng, tuple(o for o in _OBJECTS if o != c["noun"]))
    activity = _pick(rng, _ACTIVITIES)
    mate = _pick(rng, _PLAYMATES)
    moral, lesson = _pick(rng, _MORALS)
    fmt = {"name": name, "pron": pron, "Pron": Pron, "poss": poss, "feeling": _pick(rng, ("happy", "glad", "proud")),
           "friend": friend_noun}

    opening = _pick(rng, (
        f"Once upon a time, there was {_a(_pick(rng, _ADJ_CHAR))} {c['noun']} named {name}.",
        f"Once upon a time, in {_a(_pick(rng, _ADJ_THING))} {place}, there lived {_a(c['noun'])} named {name}.",
        f"There was once {_a(_pick(rng, _ADJ_CHAR))} {c['noun']} called {name}.",
        f"{name} was {_a(_pick(rng, _ADJ_CHAR))} {c['noun']} who lived near the {place}.",
    ))
    p1 = [opening,
          f"{Pron} loved to {activity}" + rng.choice((".", f" with {poss} {mate}.", f" in the {place}.")),
          _pick(rng, (f"{name} had {_a(obj_adj)} {obj} that {pron} liked very much.",
                      f"Every day, {name} would {_pick(rng, _ACTIVITIES)} and {_pick(rng, _ACTIVITIES)}.",
                      f"{Pron} was always {_pick(rng, _FEELINGS)} when it was {_pick(rng, _WEATHER)} outside."))]

    scene = [
        _pick(rng, (f"The {place} was full of {_pick(rng, _SIGHTS)} and {_pick(rng, _SIGHTS)}.",
                    f"In the {place} there were {_pick(rng, _SIGHTS)}, {_pick(rng, _SIGHTS)} and "
                    f"{_pick(rng, _SIGHTS)}.",
                    f"It was a {_pick(rng, _WEATHER)} day, and {pron} could hear {_pick(rng, _SOUNDS)}.")),
        _pick(rng, (f"{name} {_pick(rng, _ACTIONS).format(poss=poss)} and {_pick(rng, _ACTIONS).format(poss=poss)}.",
                    f"{Pron} ate some {_pick(rng, _FOODS)} and some {_pick(rng, _FOODS)} with {poss} {mate}.",
                    f"{poss.capitalize()} {mate} said it was time to {_pick(rng, _ACTIVITIES)}.",
                    f"{name} felt {_pick(rng, _FEELINGS)} and {_pick(rng, _ACTIONS).format(poss=poss)}.")),
    ]
    if rng.random() < 0.5:
        scene.append(_say(rng, name, _pick(rng, (f"I love the {place}!", f"Look at the {_pick(rng, _SIGHTS)}!",
                                                 f"Can we {_pick(rng, _ACTIVITIES)}?", "What a fun day!",
                                                 f"I want some {_pick(rng, _FOODS)}!"))))
    p1 += scene
    time = _pick(rng, _TIMES)
    plot = rng.randrange(6)
    if plot == 0:  # lost object
        p2 = [f"{time}, {name} went to the {place2} with {poss} {obj}.",
              f"{Pron} played and played, but then {pron} could not find {poss} {obj}!",
              f"{name} felt {_pick(rng, ('sad', 'worried', 'upset', 'scared'))}.",
              _say(rng, name, _pick(rng, (f"Where is my {obj}?", f"I lost my {obj}!", "Can anyone help me?")))]
        p3 = [f"Then {_a(friend)} came by.",
              _say(rng, f"The {friend_noun}", _pick(rng, ("I can help you look!", "Don't worry, we will find it.",
                                                          "Let's look together."))),
              f"They looked under {_a(_pick(rng, ('tree', 'rock', 'bush', 'bench', 'table', 'bed')))} and behind "
              f"{_a(_pick(rng, ('door', 'box', 'wall', 'fence', 'chair')))}.",
              f"At last, they found the {obj}! {name} was so {_pick(rng, ('happy', 'glad', 'thankful', 'excited'))}."]
    elif plot == 1:  # wants something, must share
        p2 = [f"{time}, {name} saw {_a(obj_adj)} {obj} in the {place2}.",
              f"{Pron} wanted it very much.",
              f"But {_a(friend)} wanted the {obj} too.",
              _say(rng, name, _pick(rng, (f"It is my {obj}!", f"I saw the {obj} first!", "Give it to me!")))]
        p3 = [f"The {friend_noun} looked {_pick(rng, ('sad', 'upset', 'hurt'))}.",
              f"{name} thought about it and felt {_pick(rng, ('sorry', 'bad', 'sad'))}.",
              _say(rng, name, _pick(rng, ("We can share it.", "Let's play with it together.", "I am sorry."))),
              f"They took turns with the {obj} and had lots of fun."]
    elif plot == 2:  # something scary / weather
        weather = _pick(rng, ("a big storm came", "it started to rain", "the wind blew hard", "it got very dark",
                              "a loud noise came from the trees"))
        p2 = [f"{time}, {name} was playing in the {place2} when {weather}.",
              f"{name} was {_pick(rng, ('scared', 'afraid', 'worried', 'nervous'))}.",
              _say(rng, name, _pick(rng, ("What is that?", "I want to go home!", "Is anyone there?",
                                          f"{mate.capitalize()}, help!"))),
              f"{Pron} ran to hide under {_a(_pick(rng, ('tree', 'table', 'bridge', 'blanket', 'big leaf')))}."]
        p3 = [f"Soon {poss} {mate} came and gave {c['obj']} a big hug.",
              _say(rng, f"{poss.capitalize()} {mate}", _pick(rng, ("It is okay, I am here.", "You are safe now.",
                                                                  "Do not be scared, it is only the wind."))),
              f"{name} felt {_pick(rng, ('safe', 'calm', 'better', 'warm'))} again.",
              f"When the sky was {_pick(rng, ('clear', 'blue', 'bright', 'quiet'))}, they went to "
              f"{_pick(rng, _ACTIVITIES)} together."]
    elif plot == 3:  # a mistake and an apology
        p2 = [f"{time}, {name} was playing with {poss} {mate}'s {obj_adj} {obj} in the {place2}.",
              f"{Pron} {_pick(rng, ('threw', 'dropped', 'pulled', 'kicked', 'squeezed'))} it too hard, and it "
              f"{_pick(rng, ('broke', 'fell in the mud', 'got a big hole', 'rolled away', 'flew over the fence'))}.",
              f"{name} felt {_pick(rng, ('bad', 'scared', 'sorry', 'sad'))} and wanted to hide it.",
              _say(rng, name, _pick(rng, ("Oh no!", "What did I do?", "Nobody saw it.", "I will be in trouble!")))]
        p3 = [f"But then {pron} went to {poss} {mate} and told the truth.",
              _say(rng, name, _pick(rng, (f"I am sorry, I broke your {obj}.", "I made a mistake. I am sorry.",
                                          f"It was me. I was not careful with the {obj}."))),
              f"{poss.capitalize()} {mate} smiled and said it was okay, and they "
              f"{_pick(rng, ('fixed it together', 'cleaned it up together', 'found a new one', 'made a new one'))}.",
              f"{name} felt {_pick(rng, ('better', 'light and happy', 'glad', 'proud'))} for being honest."]
    elif plot == 4:  # a trip
        vehicle = _pick(rng, ("car", "bus", "train", "boat", "bike", "wagon"))
        p2 = [f"{time}, {name} and {poss} {mate} went on a trip to the {place2}.",
              f"They went by {vehicle}, and {name} looked out at {_pick(rng, _SIGHTS)} and {_pick(rng, _SIGHTS)}.",
              _say(rng, name, _pick(rng, ("Are we there yet?", "This is so much fun!", f"Look, {_pick(rng, _SIGHTS)}!",
                                          "I have never been here before!"))),
              f"At the {place2}, they saw {_a(_pick(rng, _ADJ_CHAR))} {friend_noun} "
              f"{_pick(rng, ('eating', 'carrying', 'looking for', 'playing with'))} {_a(obj)}."]
        p3 = [f"{name} wanted to {_pick(rng, _ACTIVITIES)}, so {pron} asked the {friend_noun} to come along.",
              f"They {_pick(rng, _ACTIONS).format(poss='their')} and ate {_pick(rng, _FOODS)} under "
              f"{_a(_pick(rng, ('tree', 'big umbrella', 'bridge', 'tent')))}.",
              f"When the sun went down, it was time to go home on the {vehicle}.",
              f"{name} was {_pick(rng, ('tired', 'sleepy'))} but {_pick(rng, ('happy', 'glad', 'excited'))}."]
    else:  # a new friend / helping
        p2 = [f"{time}, {name} met {_a(friend)} at the {place2}.",
              f"The {friend_noun} was {_pick(rng, ('stuck', 'hungry', 'lost', 'sad', 'alone', 'cold'))}.",
              _say(rng, name, _pick(rng, ("Are you okay?", "Can I help you?", "Why are you sad?",
                                          "Do you want to play with me?"))),
              _say(rng, f"The {friend_noun}", _pick(rng, ("Yes, please!", "I need a friend.",
                                                          "I cannot find my way home.", "Thank you!")))]
        p3 = [f"{name} gave the {friend_noun} {poss} {obj}" + rng.choice(
                  (".", f" and showed it how to {_pick(rng, _ACTIVITIES)}.", " and a big smile.")),
              f"The {friend_noun} was {_pick(rng, ('happy', 'thankful', 'so glad', 'very happy'))}.",
              f"They played in the {place2} all day.",
              f"{name} felt {_pick(rng, ('proud', 'happy', 'warm inside', 'good'))} because {pron} helped."]
    lesson = lesson.format(**fmt)
    endings = _ENDINGS if plot not in (2, 3) else tuple(e for e in _ENDINGS if "{friend}" not in e)  # no friend
    ending = _pick(rng, endings).format(lesson=lesson, moral=moral.format(**fmt), **fmt)
    p3.append(ending)
    return "\n\n".join(" ".join(p) for p in (p1, p2, p3))


def generate_standin(n: int, seed: int) -> list[str]:
    """``n`` stand-in stories (not TinyStories; see the module doc), deterministic per ``seed``."""
    rng = random.Random(seed)
    return [standin_story(rng) for _ in range(n)]


# --------------------------------------------------------------------------------------------------
# Statistics


def story_stats(stories: list[str], tokenizer) -> dict[str, float]:
    """Vocabulary size (distinct token ids), unigram token entropy (bits), story length in tokens and words."""
    lengths: list[int] = []
    counts: Counter[int] = Counter()
    for ids in (tokenizer.encode(s) for s in stories):
        lengths.append(len(ids))
        counts.update(ids)
    total = sum(counts.values())
    entropy = -sum(c / total * math.log2(c / total) for c in counts.values())
    words = [len(s.split()) for s in stories]
    return {"stories": len(stories), "tokens": total, "vocab_size": len(counts), "unigram_entropy_bits": entropy,
            "mean_tokens": statistics.fmean(lengths), "median_tokens": statistics.median(lengths),
            "mean_words": statistics.fmean(words),
            "distinct_words": len({w.strip('.,!?"\'').lower() for s in stories for w in s.split()})}
