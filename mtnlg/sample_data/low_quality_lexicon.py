"""Words and spun sentence templates of the low-quality web pages (``low_quality.py``).

All of it is written for this project (Apache-2.0).  Templates use ``[a|b|c]`` for spun
alternatives (one is drawn per use, as article-spinning tools do) and ``{slot}`` for values the
page fills in; real place names are facts.  Every list is long enough that two pages of one kind
share few word 5-grams, so the pages pass the Gopher repetition rules the way real spun SEO text
does: the quality classifier, not a heuristic, has to recognise them.
"""
from __future__ import annotations

CITIES = ("Dallas", "Phoenix", "Denver", "Atlanta", "Miami", "Seattle", "Boston", "Houston",
          "Austin", "Orlando", "Chicago", "San Diego", "Portland", "Tampa", "Nashville",
          "Las Vegas", "Charlotte", "Columbus", "Detroit", "Sacramento", "Leeds", "Manchester",
          "Bristol", "Glasgow", "Toronto", "Calgary", "Brisbane", "Perth", "Auckland")
BRAND_HEADS = ("Prime", "Ace", "Apex", "Blue", "Summit", "Golden", "Smart", "Rapid", "True",
               "Star", "Elite", "Metro", "Eagle", "Nova", "Bright", "Swift", "Royal", "Alpha")
BRAND_TAILS = ("Solutions", "Pros", "Experts", "Direct", "Hub", "Point", "Group", "Masters",
               "Express", "Works", "Center", "Partners", "Services", "Plus", "Choice", "Zone")
YEARS = ("2019", "2020", "2021")

# SEO pages: (keyword, what the business calls its offer).
SEO_KEYWORDS = (
    ("car insurance", "policy"), ("payday loans", "loan"), ("web hosting", "plan"),
    ("weight loss pills", "formula"), ("roof repair", "service"), ("emergency plumber", "service"),
    ("locksmith service", "service"), ("teeth whitening", "treatment"), ("cbd oil", "product"),
    ("casino bonus", "offer"), ("forex signals", "package"), ("essay writing service", "order"),
    ("moving company", "move"), ("carpet cleaning", "service"), ("used cars", "deal"),
    ("cheap flights", "ticket"), ("hair transplant", "procedure"), ("solar panels", "system"),
    ("keto diet pills", "supplement"), ("debt consolidation", "program"),
    ("personal injury lawyer", "case"), ("garage door repair", "job"), ("pest control", "visit"),
)
SEO_MODIFIERS = ("best", "cheap", "affordable", "top rated", "trusted", "local", "professional",
                 "discount", "same day", "certified", "fast", "low cost", "licensed", "reliable")
SEO_SENTENCES = (
    "[Looking for|Searching for|In need of|Trying to find] [the best|a cheap|an affordable|a reliable] {kw} in {city}?",
    "Our [experts|specialists|team|staff] [offer|provide|deliver] the [best|cheapest|most affordable] [deals|prices|rates] in {city} and [nearby|surrounding|all neighbouring] areas.",
    "[Get|Request|Claim] your [free|no obligation|instant] [quote|estimate] [today|right now|in minutes] and [save|save big|start saving].",
    "When it comes to {mod} {kw}, [nobody|no one|no other company] [beats|can beat|comes close to] {brand}.",
    "{brand} [has been|is] [the leading|a trusted|the number one] [provider|company|choice] in {city} [for over|for more than] {n} years.",
    "Why [choose|pick|go with] {brand}? Because we [care about|value] our [customers|clients] and [always|consistently] [deliver|provide] [top quality|excellent] [service|results] at the [lowest|best] [price|prices].",
    "[Call|Contact|Phone] us [today|now] [to learn more|for more information|for details] about our {mod} [services|packages|plans].",
    "[Cheap|Affordable|Low cost] {kw} [does not|doesn't] have to [mean|be] [low quality|poor service|a headache].",
    "[Thousands|Hundreds] of [happy|satisfied|loyal] [customers|clients] in {city} [trust|rely on|choose] {brand} [every year|again and again].",
    "[Compare|Check] [prices|rates|offers] [from|across] [top|leading] [providers|companies] and save up to {pct} percent on your next {offer}.",
    "[Every|Each] {offer} [comes with|includes] a [money back guarantee|free consultation|lifetime warranty] so you have nothing to lose.",
    "[Do not|Don't] [settle for|waste money on] [expensive|overpriced] [offers|deals] when {mod} {kw} is [only a click away|available today|right here].",
    "The [secret|key|trick] to [finding|getting] a [great|good|better] {offer} in {city} is to [compare|shop around|act fast] [before prices go up|while offers last|this season].",
    "[Our|The] [reviews|ratings] [show|prove] that {brand} is the [best|top|smartest] [choice|option|pick] for {kw} in {year}.",
    "[Whether you need|If you need|For anyone who needs] [help|it] [fast|urgently|on a budget], {brand} [has you covered|is here to help|is the answer].",
    "[Book|Order|Schedule] [online|today|now] and [get|enjoy|receive] [a free bonus|free delivery|an extra discount] of {pct} percent.",
    "[We know|We understand|Everyone knows] that [choosing|finding] the right [company|provider|partner] [can be|is often] [hard|stressful|confusing], [which is why|so] we [make it|keep it] [simple|easy|quick].",
    "[All|Each of] our [staff|experts|agents] [are|is] [fully trained|licensed and insured|friendly and honest] and [ready to help|on call|available] [seven days a week|around the clock|all year].",
)
SEO_QUESTIONS = (
    "How much does {kw} cost in {city}?", "What is the best {kw} near me?",
    "Is {mod} {kw} worth it?", "Where can I find {kw} [fast|today]?",
    "Who [has|offers] the cheapest {kw} in {city}?",
)

# Product pages: (product, [features], {spec: [values]}).
PRODUCTS = (
    ("wireless earbuds", ("long battery life", "active noise cancelling", "a secure ergonomic fit", "touch controls", "a sweat resistant design"),
     {"Color": ("Black", "White", "Navy"), "Connectivity": ("Bluetooth",), "Warranty": ("One year",)}),
    ("stainless steel water bottle", ("double wall vacuum insulation", "a leak proof lid", "a powder coated finish", "a wide mouth opening"),
     {"Color": ("Sage", "Charcoal", "Coral"), "Material": ("Stainless steel",), "Capacity": ("Large",)}),
    ("memory foam pillow", ("a cooling gel layer", "a washable bamboo cover", "adjustable loft", "hypoallergenic materials"),
     {"Size": ("Queen", "King", "Standard"), "Fill": ("Memory foam",), "Cover": ("Bamboo",)}),
    ("robot vacuum cleaner", ("strong suction power", "smart mapping", "app control", "automatic recharging", "quiet operation"),
     {"Color": ("Black", "Silver"), "Runtime": ("Two hours",), "Filter": ("HEPA",)}),
    ("running shoes", ("a breathable mesh upper", "responsive cushioning", "a durable rubber outsole", "a lightweight build"),
     {"Color": ("Red", "Grey", "Blue"), "Closure": ("Lace up",), "Material": ("Mesh",)}),
    ("electric coffee grinder", ("stainless steel blades", "a one touch button", "a removable bowl", "a compact design"),
     {"Color": ("Black", "Cream"), "Power": ("Corded electric",), "Material": ("Stainless steel",)}),
    ("yoga mat", ("a non slip surface", "extra thick cushioning", "an eco friendly material", "a carrying strap"),
     {"Color": ("Purple", "Teal", "Black"), "Material": ("Natural rubber",), "Thickness": ("Thick",)}),
    ("air fryer", ("rapid air circulation", "a nonstick basket", "digital presets", "an automatic shut off"),
     {"Color": ("Black", "White"), "Capacity": ("Family size",), "Control": ("Touch screen",)}),
    ("laptop backpack", ("a padded laptop sleeve", "water resistant fabric", "a hidden anti theft pocket", "a charging port"),
     {"Color": ("Grey", "Black", "Green"), "Material": ("Polyester",), "Fits": ("Most laptops",)}),
    ("electric toothbrush", ("five cleaning modes", "a smart timer", "a travel case", "fast wireless charging"),
     {"Color": ("White", "Pink", "Black"), "Battery": ("Rechargeable",), "Heads": ("Two included",)}),
    ("phone case", ("military grade drop protection", "a slim profile", "raised edges", "a scratch resistant back"),
     {"Color": ("Clear", "Black", "Rose"), "Material": ("Silicone",), "Compatible": ("Many models",)}),
)
FEATURE_BULLET = ("[enjoy|experience|benefit from] {f}, [so you can|which lets you|allowing you to] "
                  "[focus on what matters|get more done|relax and enjoy it|use it every day] "
                  "[without worry|with confidence|in comfort|for years to come].")
PRODUCT_ADJECTIVES = ("Premium", "Ultra", "Pro", "Deluxe", "Classic", "Advanced", "Essential", "Max")
PRODUCT_PITCH = (
    "[Upgrade|Transform|Improve] your [daily routine|everyday life|home] with the {name}, [designed|built|made] for [people|customers|anyone] who [want|demand|expect] [the best|more|quality].",
    "With {feature}, this {product} [is perfect for|is ideal for|works great for] [home|work|travel|the gym] and [makes a great gift|will not let you down|is built to last].",
    "[Thanks to|Featuring|Equipped with] {feature} and {feature2}, the {name} [stands out from|beats|outperforms] [other|cheaper|competing] products.",
    "[Order now|Buy today|Add to cart now] and [get|enjoy] [free shipping|a free gift|an extra discount] [on orders over|for purchases above] {price}.",
    "[We are|Our team is] [confident|sure] you will love [it|your purchase|this product], [which is why|so] every order [comes with|includes] a [thirty day|hassle free|risk free] return policy.",
    "[Limited stock|Only a few left|Selling fast], so [do not miss out|act fast|grab yours] [while supplies last|before it is gone|today]!",
)
REVIEWS = ("Works great, would buy again.", "Exactly as described and arrived quickly.",
           "Good value for the money.", "My wife loves it, five stars.", "Not bad for the price.",
           "Better than the one I had before.", "Arrived on time and well packed.",
           "Great product, fast shipping.", "Does the job, nothing fancy.", "Highly recommend this seller.")
FIRST_NAMES = ("Mike", "Sarah", "Tom", "Linda", "James", "Emma", "Carlos", "Priya", "Kevin", "Anna",
               "David", "Julia", "Mark", "Nina", "Paul", "Grace")

# Listing pages (classifieds): (kind, [entry templates]).
LISTINGS = (
    ("apartments for rent", (
        "[Bright|Spacious|Cozy|Modern|Renovated|Charming|Sunny|Quiet] {rooms} bedroom [apartment|flat|condo|unit|home] [close to|near|by|a short drive from|minutes from|across from] [the station|downtown|the park|local shops|the university|the beach|the river|a school] with [a balcony|parking|a new kitchen|laundry|a garden|high ceilings|a view|storage].",
        "[Available|Ready|Free|Vacant] [now|from next month|immediately|this summer|in March|after Easter].",
        "[Pets allowed|No pets please|Utilities included|Furnished|Unfurnished|Recently painted|New carpets|Water included].",
        "[Contact|Call|Message|Email|Text] the [agent|owner|landlord|office|manager] [for a viewing|to visit|for details|with questions].",
        "[The building has|Residents enjoy|Amenities include|You also get] [a gym|a pool|a doorman|an elevator|bike storage|a sauna] and [a rooftop terrace|a playground|secure entry|a shared yard|a lounge].",
        "Rent is {price} [per month|a month|monthly] [plus deposit|plus bills|with a lease|all inclusive|or best offer].",
        "[Ideal for|Perfect for|Suits|Great for] [students|a couple|a small family|professionals|sharers|retirees].",
        "[Viewings|Open house|Showings] [on Saturday|this weekend|by appointment|every evening|on request].")),
    ("used cars for sale", (
        "[Clean|Well maintained|Low mileage|One owner|Reliable|Garage kept|Tidy|Sporty] {year} {car} [in great condition|with service history|with new tires|with a clean title|that runs like new|in silver|in blue|in black].",
        "[Automatic|Manual] [transmission|gearbox|drive] with [air conditioning|leather seats|a backup camera|cruise control|heated mirrors|navigation].",
        "[It also has|Extras include|Comes with|Fitted with] [a sunroof|heated seats|bluetooth|a tow hitch|alloy wheels|roof bars|winter tires].",
        "[No accidents|Never smoked in|Always serviced|Recent oil change|New brakes|New battery|Two keys].",
        "[Selling because|For sale because|Must sell as|Reluctant sale as] [we bought a bigger car|I am moving abroad|we need the space|of a new company car|the kids left home].",
        "Asking {price} [or near offer|firm|cash only|with financing|or trade] [in|near|around] {area}.",
        "[Passed inspection|Fresh inspection|Tax paid|Registered|Warranty left] [last month|this spring|until next year|recently].",
        "[Test drives|Viewings|Inspections] [welcome|by appointment|on weekends|any evening].")),
    ("jobs hiring now", (
        "[Immediate start|Hiring now|Urgent opening|Now recruiting|Vacancy|New role]: {job} [wanted|needed|required|sought] [for|at|by] a [busy|growing|friendly|family run|new|local] [team|company|store|site|business] in {area}.",
        "[No experience needed|Experience preferred|Training provided|Full training given|Some experience helps].",
        "[Full time|Part time|Flexible hours|Night shifts|Weekend work|Early mornings|Seasonal] with [weekly pay|benefits|paid overtime|tips|a pension|free meals].",
        "[You will|The role will|Duties] [help|assist|support|serve] [customers|the manager|our team|other staff|visitors].",
        "[Tasks include|You will also|The job involves] [keeping things tidy|handling deliveries|taking orders|answering the phone|stock counts].",
        "[Must be|Candidates must be|You should be|We want someone] [reliable|punctual|friendly|hard working|calm|organised].",
        "Pay is {price} [per hour|an hour|hourly|plus bonus|to start].",
        "[Apply online|Send your resume|Walk in today|Call the office|Email us] [now|this week|before Friday|soon].")),
)
LISTING_INTRO = (
    "Showing {k} of {total} [ads|listings|results] for {what} in {city} and [the surrounding area|nearby "
    "towns|within ten miles]. [New ads are added|Listings are updated] [every day|every hour|daily], so "
    "[check back often|save this search|sign up for email alerts] to [be the first to know|never miss a "
    "deal|see new ads first]. [All prices are|Prices are] [shown|listed] [as the seller gave them|in local "
    "currency|before fees] and [every ad is|all ads are] [checked|reviewed] by [our team|a moderator] "
    "[before it goes live|for spam|within an hour]. [Sorted by|Sort by] [newest first|price|distance].")
AREAS = ("Riverside", "Northgate", "the West End", "Hillcrest", "Lakeview", "Mill Park", "Old Town",
         "the harbour district", "Greenfield", "Kingsway", "Elm Grove", "Southside", "Bridgeport",
         "Castle Hill", "Meadowbank", "the university quarter", "Oakwood", "Station Road")
CARS = ("Honda Civic", "Toyota Corolla", "Ford Focus", "Mazda Three", "Nissan Altima", "Subaru Outback",
        "Chevrolet Malibu", "Volkswagen Golf", "Hyundai Elantra", "Kia Sportage")
JOBS = ("warehouse worker", "delivery driver", "line cook", "cashier", "cleaner", "security guard",
        "call center agent", "forklift driver", "barista", "care assistant")

# Link farms: site categories and directory blurbs.
DIRECTORY_CATEGORIES = ("Business and Finance", "Health and Fitness", "Home and Garden", "Travel",
                        "Shopping", "Automotive", "Real Estate", "Education", "Legal Services")
DIRECTORY_BLURBS = (
    "{site} [offers|provides|sells] [a wide range of|quality|cheap|discount] {topic} [for|to] [customers|buyers|clients] [in|across|throughout] [the country|the region|the world].",
    "[Visit|Check out|See] {site} for [more|special|exclusive] [offers|deals|information] on {topic}.",
    "[A trusted|The leading|An independent] [source|guide|directory] for {topic}, [updated|reviewed] [daily|weekly|by our editors].",
    "[Find|Compare|Discover] the [best|cheapest|latest] {topic} [online|in one place|near you] at {site}.",
    "[Family owned|Established|Award winning] [business|company|store] [since|from] {year} [specialising in|focusing on|dealing with] {topic}.",
)
LINK_FARM_INTRO = (
    "Welcome to our [{cat}|{cat} web] directory. [Below|Here] you will find [a list of|our selection of] the [best|top|most popular] {cat} [websites|sites|resources], [reviewed and approved|hand picked|checked] by our [editors|team].",
    "[Submit|Add] your [site|website|link] [today|now] and get a [permanent|free|dofollow] backlink [from|on] this page. [Link exchange|Reciprocal links] [welcome|accepted].",
)

# Templated scraper pages.
WORD_PAGE = (
    "What does {word} mean? [Here|On this page] you [can|will] find the meaning of {word}, [synonyms|related words], rhymes and example sentences [from the web|from real texts|in English].",
    "The word {word} has {letters} letters [and|with] {vowels} vowels. It starts with the letter {first} and ends with the letter {last}.",
    "{word} is [ranked|listed] number {rank} in our list of the most [searched|popular|looked up] words [this week|today|this month], [up|down] {moves} places since [yesterday|last week].",
    "Words that rhyme with {word}: {rhymes}.", "Words starting with {prefix}: {starts}.",
    "[Example sentences|Sample sentences|Examples of use] with {word}: {example}",
    "[How to|Learn to] [pronounce|spell|use] {word}: [listen to|read|check] the [audio|examples|guide] [above|below] and [practise|repeat] it [out loud|several times|with a friend].",
    "[Did you find|Was] this [page|definition] [helpful|useful]? [Share it with your friends|Rate it below|Leave a comment] and [check out|see|browse] [more words|the word of the day|our word games].",
)
TAG_PAGE = (
    "[News|Latest news], [photos|pictures] and videos about {title}. [Find|Read|Get] the [latest|newest|top] [stories|updates|headlines] [here|on this page], [collected|gathered|picked] [from around the web|from hundreds of sources|by our robots] [every day|around the clock|as they happen].",
    "[People who searched for|Visitors interested in|Readers of] this topic [also searched for|also read about|also liked] {others}.",
    "[This page|This tag page] [is updated|updates] [automatically|every hour|daily] with [all|new] [content|articles] tagged {title}. [Follow|Subscribe to] this topic to [get|receive] [notifications|alerts|updates] [when new stories are published|as soon as they appear].",
)
TAG_HEADLINES = ("{}: what you need to know", "The truth about {}", "{} explained in five minutes",
                 "Why everyone is talking about {}", "{}: the latest updates", "Ten facts about {}")
TAG_TEASER_END = ("Read more", "Continue reading", "Full story", "See more")

# Machine translation: literal, context-free replacements of a word-for-word system.
MT_REPLACEMENTS = {
    "because": "because of that", "however": "but nevertheless", "many": "much", "people": "persons",
    "became": "became to be", "known": "acquainted", "important": "importantly", "also": "too also",
    "during": "in time of", "including": "comprising of", "called": "named as", "began": "made start",
    "between": "among of", "used": "utilised", "large": "big-sized", "small": "little-sized",
    "city": "urban place", "country": "land", "government": "governance", "century": "hundred-year",
    "several": "some several", "although": "albeit that", "often": "oftentimes", "later": "more late",
    "early": "premature", "world": "earth world", "first": "firstly", "other": "another",
    "part": "portion", "made": "fabricated", "work": "labour", "found": "founded", "help": "aid",
    "since": "from that", "would": "will would", "could": "can could", "following": "next-coming",
    "however,": "but nevertheless,", "such": "so", "area": "zone", "state": "condition",
}
MT_PREPOSITIONS = ("in", "on", "at", "of", "for", "to", "by", "with")
MT_TITLES = ("{title} - what is it, history and features", "{title}: all information",
             "{title} | complete guide translated", "Everything about {title}")

# Cookie / consent walls: (heading, [paragraph templates]).
CONSENT_TEMPLATES = (
    "[We value your privacy|Your privacy is important to us|We care about your privacy].",
    "We and our {partners} [partners|vendors|ad partners] store and/or access information on a device, such as cookies, and process personal data, such as unique identifiers and standard information sent by a device, for [personalised ads and content|personalised advertising], ad and content measurement, audience insights and product development.",
    "With your permission we and our partners may use precise geolocation data and identification through device scanning.",
    "You may click to consent to our and our partners' processing as described above. [Alternatively|Otherwise] you may [access more detailed information|review your options] and change your preferences before consenting or to refuse consenting.",
    "Please note that some processing of your personal data may not require your consent, but you have a right to object to such processing.",
    "Your preferences will apply to [this website only|all websites of {site}|{site} and its partner sites]. You can change your preferences at any time by returning to this site or visiting our privacy policy.",
    "[Strictly necessary|Essential] cookies are required for the website to function and cannot be switched off. They are usually only set in response to actions made by you, such as setting your privacy preferences, logging in or filling in forms.",
    "[Performance|Analytics] cookies allow us to count visits and traffic sources so we can measure and improve the performance of our site. All information these cookies collect is aggregated and therefore anonymous.",
    "[Targeting|Advertising] cookies may be set through our site by our advertising partners. They may be used by those companies to build a profile of your interests and show you relevant adverts on other sites.",
    "[Functional|Preference] cookies enable the website to provide enhanced functionality and personalisation. If you do not allow these cookies then some or all of these services may not function properly.",
)
CONSENT_PURPOSES = (
    "Store and/or access information on a device", "Use limited data to select advertising",
    "Create profiles for personalised advertising", "Use profiles to select personalised advertising",
    "Create profiles to personalise content", "Measure advertising performance",
    "Measure content performance", "Understand audiences through statistics or combinations of data from different sources",
    "Develop and improve services", "Use limited data to select content",
)
CONSENT_BUTTONS = ("Accept all", "Reject all", "Manage preferences", "Show purposes", "Vendor list",
                   "Save and exit", "Confirm my choices", "Allow all cookies", "More options")
VENDOR_HEADS = ("Ad", "Data", "Pixel", "Media", "Signal", "Target", "Audience", "Metric", "Click",
                "Insight", "Reach", "Bid", "Trade", "Smart", "Next", "Open")
VENDOR_TAILS = ("Sense", "Stream", "Works", "Logic", "Labs", "Link", "Point", "Square", "Hive",
                "Flow", "Base", "Nexus", "Scope", "Frame")
VENDOR_FORMS = ("Inc.", "Ltd", "GmbH", "SAS", "LLC", "B.V.", "AB")
DIRECTORY_TOPICS = {
    "Business and Finance": ("business loans", "accounting software", "tax advice", "credit cards", "payroll services", "insurance quotes"),
    "Health and Fitness": ("vitamins", "weight loss programs", "home gym equipment", "dental care", "protein powder", "yoga classes"),
    "Home and Garden": ("kitchen cabinets", "garden furniture", "window cleaning", "roofing", "interior design", "plumbing supplies"),
    "Travel": ("hotel deals", "car rental", "cheap flights", "holiday packages", "travel insurance", "airport parking"),
    "Shopping": ("discount clothing", "designer handbags", "gift cards", "jewelry", "sports shoes", "electronics"),
    "Automotive": ("car parts", "tire shops", "auto repair", "car wash", "used trucks", "motorcycle gear"),
    "Real Estate": ("homes for sale", "property management", "mortgage brokers", "rental apartments", "commercial property", "home inspections"),
    "Education": ("online courses", "tutoring", "language schools", "test preparation", "coding bootcamps", "student loans"),
    "Legal Services": ("divorce lawyers", "immigration advice", "personal injury claims", "notary services", "business law", "traffic tickets"),
}

# Site chrome of each kind of low-quality site: (menu items, footer items); a page shows a
# sample of each, so two pages of one site style rarely have identical chrome.
SITE_STYLES = {
    "business": (("Home", "Services", "Areas we serve", "Reviews", "Pricing", "Blog", "About us",
                  "Contact", "Get a free quote", "Call now", "Special offers", "FAQ"),
                 ("Privacy", "Sitemap", "Terms", "Licensed and insured", "Serving the whole metro area",
                  "Open seven days a week", "Website by a local agency")),
    "shop": (("Home", "Shop all", "Deals", "New arrivals", "Best sellers", "Gift cards", "Sign in",
              "Cart", "Wish list", "Track order", "Sale", "Brands"),
             ("Free shipping on orders over fifty dollars", "Easy returns", "Secure checkout",
              "Customer service", "Payment methods", "Shipping policy", "Size guide", "Newsletter signup")),
    "marketplace": (("Post an ad", "My ads", "Messages", "For sale", "Cars", "Property", "Jobs",
                     "Services", "Community", "Help", "Safety tips", "Sign in"),
                    ("How it works", "Stay safe when buying", "Report a problem", "Posting rules",
                     "Terms of use", "Privacy", "Advertise")),
    "directory": (("Home", "Add URL", "Categories", "Top sites", "New listings", "Link to us",
                   "Featured sites", "Search the directory", "Login", "Rules"),
                  ("Submit site", "Terms", "Contact the webmaster", "Link exchange", "Partner directories",
                   "Listings are reviewed by hand")),
    "portal": (("Home", "Topics", "Trending", "Random", "Dictionary", "Thesaurus", "Word games",
                "Categories", "Latest", "Popular", "About"),
               ("Content is gathered automatically", "Report content", "Privacy", "Contact",
                "Terms", "Do not sell my data")),
}
