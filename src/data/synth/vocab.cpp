// src/data/synth/vocab.cpp: the word tables behind the synthetic dataset generator.
//
// All text here was written for pwab; none of it is taken from a dataset. Feature bullets use "{Name}" for
// the product's value of attribute Name (always one of the type's own `attributes`) and "{noun}" for the
// type's noun. Complements name other types of the same category by their exact noun.
#include "data/synth/vocab.h"

namespace pwab::data::synth {

namespace {

// ---------------------------------------------------------------------------------------------------------
// Electronics: audio, phones and their accessories, computers and wearables.
// ---------------------------------------------------------------------------------------------------------
Category make_electronics() {
  return Category{
      .main_category = "All Electronics",
      .paper_name = "Electronics",
      .top_category = "Electronics",
      .interest = "tech gadgets",
      .weight = 0.24,
      .attributes =
          {
              {"Color",
               {"Black", "White", "Silver", "Space Gray", "Midnight Blue", "Graphite", "Rose Gold", "Sage Green",
                "Charcoal", "Crimson Red", "Lavender", "Starlight"}},
              {"Connectivity",
               {"Bluetooth 5.3", "Bluetooth 5.2", "Bluetooth 5.1", "Bluetooth 5.0", "2.4GHz Wireless",
                "Bluetooth and 2.4GHz Dual Mode", "Tri-Mode Wireless", "Bluetooth with Multipoint"}},
              {"Battery Life",
               {"6 hours", "8 hours", "10 hours", "12 hours", "15 hours", "20 hours", "24 hours", "30 hours",
                "40 hours", "50 hours", "60 hours"}},
              {"Wattage", {"10W", "20W", "30W", "40W", "60W", "65W", "100W", "120W", "140W", "200W"}},
              {"Storage", {"32GB", "64GB", "128GB", "256GB", "512GB", "1TB", "2TB", "4TB"}},
              {"Screen Size",
               {"10.1 inch", "11 inch", "12.4 inch", "13.3 inch", "14 inch", "15.6 inch", "16 inch", "17.3 inch"}},
              {"Compatibility",
               {"Windows PC", "MacBook", "Chromebook", "iPad", "PlayStation 5", "Xbox Series X", "Nintendo Switch",
                "Linux", "Android Devices", "Universal"}},
              {"Phone Model",
               {"iPhone 15", "iPhone 15 Pro", "iPhone 15 Pro Max", "iPhone 14", "iPhone 13", "Galaxy S24",
                "Galaxy S24 Ultra", "Galaxy S23", "Pixel 8", "Pixel 8 Pro", "Pixel 7a"}},
              {"Resolution",
               {"720p HD", "1080p Full HD", "1440p QHD", "2K QHD", "4K UHD", "1080p 60fps", "4K 30fps", "2K 30fps"}},
              {"Capacity",
               {"5000mAh", "10000mAh", "15000mAh", "20000mAh", "25600mAh", "26800mAh", "30000mAh", "40000mAh"}},
          },
      .types =
          {
              // Wireless earbuds
              {.noun = "Wireless Earbuds",
               .short_noun = "earbuds",
               .categories = {"Headphones, Earbuds & Accessories", "Headphones & Earbuds", "Earbud Headphones"},
               .price_median = 49,
               .price_spread = 0.55,
               .attributes = {"Color", "Connectivity", "Battery Life"},
               .features =
                   {
                       "IMMERSIVE SOUND: Custom 10mm dynamic drivers deliver punchy bass and clear vocals for music, "
                       "podcasts and calls",
                       "ALL-DAY PLAYTIME: Up to {Battery Life} of total listening with the pocket-sized charging "
                       "case, plus a quick 10-minute top-up",
                       "STABLE CONNECTION: {Connectivity} pairs instantly when you open the case and keeps audio in "
                       "sync with video",
                       "SECURE FIT: Three sizes of soft silicone ear tips keep the {noun} comfortable and in place "
                       "during workouts",
                       "SWEAT RESISTANT: IPX5 water resistance shrugs off rain and sweat, and the {Color} finish "
                       "resists scratches and fingerprints",
                       "CLEAR CALLS: Four microphones with noise reduction pick up your voice and filter out wind and "
                       "traffic",
                   },
               .aspects = {"sound quality", "battery life", "fit", "comfort", "connection stability", "call quality"},
               .uses = {"for my daily commute", "to listen to music at the gym", "for taking calls on the go",
                        "to block out noise on flights"},
               .complements = {"Portable Charger", "USB-C Charging Cable"}},

              // Over-ear headphones
              {.noun = "Noise Cancelling Headphones",
               .short_noun = "headphones",
               .categories = {"Headphones, Earbuds & Accessories", "Headphones & Earbuds", "Over-Ear Headphones"},
               .price_median = 119,
               .price_spread = 0.6,
               .attributes = {"Color", "Connectivity", "Battery Life"},
               .features =
                   {
                       "ACTIVE NOISE CANCELLING: Hybrid noise cancelling reduces engine hum, chatter and office noise "
                       "so you can focus",
                       "LONG BATTERY: Up to {Battery Life} of playback on a single charge, with five minutes of "
                       "charging adding hours more",
                       "PLUSH COMFORT: Memory foam ear cushions and a padded, adjustable headband stay comfortable "
                       "through long listening sessions",
                       "WIRELESS FREEDOM: {Connectivity} connects to phones, tablets and laptops, and a wired cable "
                       "is included for flights",
                       "FOLDABLE DESIGN: The {Color} {noun} fold flat into the included travel case for easy packing",
                       "TRANSPARENCY MODE: Hear announcements and conversations clearly without taking the headphones "
                       "off",
                   },
               .aspects = {"noise cancellation", "sound quality", "comfort", "battery life", "build quality"},
               .uses = {"for long flights", "to focus while working from home", "to block out noise in a busy office",
                        "for listening to audiobooks at night"},
               .complements = {"USB-C Charging Cable", "Portable Charger"}},

              // Gaming headset
              {.noun = "Gaming Headset",
               .short_noun = "gaming headset",
               .categories = {"Computers & Accessories", "Computer Accessories & Peripherals", "PC Gaming Headsets"},
               .price_median = 59,
               .price_spread = 0.55,
               .attributes = {"Color", "Compatibility"},
               .features =
                   {
                       "SURROUND SOUND: Virtual 7.1 surround sound helps you pinpoint footsteps and gunfire in "
                       "competitive games",
                       "WIDE COMPATIBILITY: Works with {Compatibility} and other devices through the included USB and "
                       "3.5mm adapters",
                       "NOISE CANCELLING MIC: The flexible boom microphone reduces background noise and mutes "
                       "automatically when flipped up",
                       "ALL-NIGHT COMFORT: Breathable memory foam ear cups and a lightweight frame reduce pressure "
                       "during long gaming sessions",
                       "RGB LIGHTING: Customizable lighting on the {Color} ear cups matches the rest of your gaming "
                       "setup",
                   },
               .aspects = {"microphone quality", "sound quality", "comfort", "build quality", "cable length"},
               .uses = {"for online gaming with friends", "to hear footsteps clearly in shooters",
                        "for late-night gaming without waking anyone", "for team chat while streaming"},
               .complements = {"Wireless Mouse", "Mechanical Keyboard"}},

              // Portable speaker
              {.noun = "Portable Bluetooth Speaker",
               .short_noun = "speaker",
               .categories = {"Portable Audio & Video", "Portable Speakers & Docks", "Portable Bluetooth Speakers"},
               .price_median = 49,
               .price_spread = 0.55,
               .attributes = {"Color", "Battery Life", "Wattage"},
               .features =
                   {
                       "BIG SOUND: {Wattage} of output with dual passive radiators fills a living room or backyard "
                       "with rich bass",
                       "LONG PLAYTIME: Enjoy up to {Battery Life} of music on a single charge at moderate volume",
                       "WATERPROOF: An IPX7 rating means the {noun} survives splashes, rain and even a quick drop in "
                       "the pool",
                       "STEREO PAIRING: Link two speakers for true stereo sound or party mode with a single button",
                       "RUGGED AND PORTABLE: A durable {Color} fabric grille and carrying strap make it easy to bring "
                       "along anywhere",
                   },
               .aspects = {"sound quality", "bass", "battery life", "volume", "portability"},
               .uses = {"for pool parties", "to play music while camping", "for the beach",
                        "to bring music to backyard barbecues"},
               .complements = {"USB-C Charging Cable", "Portable Charger"}},

              // Smartphone
              {.noun = "Unlocked Smartphone",
               .short_noun = "phone",
               .categories = {"Cell Phones & Accessories", "Cell Phones"},
               .price_median = 299,
               .price_spread = 0.6,
               .attributes = {"Storage", "Color", "Battery Life"},
               .features =
                   {
                       "VIVID DISPLAY: A bright 6.5 inch AMOLED screen with a smooth 120Hz refresh rate makes "
                       "scrolling and streaming effortless",
                       "PLENTY OF SPACE: {Storage} of built-in storage holds thousands of photos, apps and offline "
                       "videos",
                       "ALL-DAY BATTERY: Up to {Battery Life} of video playback, with fast charging to get back to "
                       "full quickly",
                       "TRIPLE CAMERA: A 50MP main camera, ultra-wide lens and night mode capture sharp photos in any "
                       "light",
                       "UNLOCKED: Works with major carriers on 5G and 4G LTE networks, with no contract required",
                       "SLEEK DESIGN: A slim {Color} glass back and aluminum frame feel premium in the hand",
                   },
               .aspects = {"camera quality", "battery life", "screen", "performance", "speed"},
               .uses = {"to replace my old phone", "for taking photos on vacation", "for my teenager",
                        "to stay connected while traveling"},
               .complements = {"Phone Case", "Fast Wall Charger", "Wireless Charging Pad"}},

              // Phone case
              {.noun = "Phone Case",
               .short_noun = "phone case",
               .categories = {"Cell Phones & Accessories", "Cases, Holsters & Sleeves", "Basic Cases"},
               .price_median = 15,
               .price_spread = 0.45,
               .attributes = {"Phone Model", "Color"},
               .features =
                   {
                       "PRECISE FIT: Designed specifically for {Phone Model}, with exact cutouts for buttons, ports and "
                       "cameras",
                       "DROP PROTECTION: Shock-absorbing corners and a raised bezel protect the screen and camera from "
                       "drops up to 10 feet",
                       "SLIM AND LIGHT: The {Color} case adds almost no bulk and slides easily into pockets",
                       "GRIPPY TEXTURE: A soft-touch matte finish resists fingerprints and keeps the phone from "
                       "slipping out of your hand",
                       "WIRELESS CHARGING READY: Charge through the case without removing it, including with magnetic "
                       "chargers",
                   },
               .aspects = {"fit", "protection", "grip", "thickness", "color"},
               .uses = {"to protect my new phone", "for someone who drops their phone a lot",
                        "to keep my phone looking new", "for a better grip on my phone"},
               .complements = {"Wireless Charging Pad"}},

              // Wireless charger
              {.noun = "Wireless Charging Pad",
               .short_noun = "wireless charger",
               .categories = {"Cell Phones & Accessories", "Accessories", "Wireless Chargers"},
               .price_median = 22,
               .price_spread = 0.45,
               .attributes = {"Wattage", "Color"},
               .features =
                   {
                       "FAST WIRELESS CHARGING: Up to {Wattage} of charging power for compatible phones and earbuds",
                       "JUST SET IT DOWN: Place your phone on the pad and charging starts instantly, even through most "
                       "cases",
                       "SAFE CHARGING: Built-in temperature control and foreign object detection protect your device "
                       "overnight",
                       "BEDSIDE FRIENDLY: A soft indicator light turns off after charging begins, so it will not "
                       "disturb your sleep",
                       "LOW PROFILE: The slim {Color} {noun} blends in on nightstands, desks and kitchen counters",
                   },
               .aspects = {"charging speed", "heat", "alignment", "indicator light", "build quality"},
               .uses = {"for my nightstand", "to charge my phone at my desk", "to reduce cable clutter",
                        "for charging earbuds overnight"},
               .complements = {"Phone Case", "Fast Wall Charger"}},

              // Wall charger
              {.noun = "Fast Wall Charger",
               .short_noun = "charger",
               .categories = {"Cell Phones & Accessories", "Accessories", "Chargers & Power Adapters"},
               .price_median = 25,
               .price_spread = 0.5,
               .attributes = {"Wattage", "Color"},
               .features =
                   {
                       "FAST CHARGING: {Wattage} of power delivery charges a phone to 50 percent in about 30 minutes",
                       "CHARGE TWO DEVICES: Dual USB-C and USB-A ports power a phone and a tablet at the same time",
                       "COMPACT BUILD: Gallium nitride technology makes the {noun} about half the size of a standard "
                       "adapter",
                       "TRAVEL READY: Foldable prongs and a {Color} finish make it easy to toss in a bag or pocket",
                       "SAFETY FIRST: Protection against overheating, overcurrent and short circuits keeps your "
                       "devices safe",
                   },
               .aspects = {"charging speed", "size", "heat", "build quality", "reliability"},
               .uses = {"for fast charging my phone", "to charge my laptop and phone at once", "for travel",
                        "to replace a slow charger"},
               .complements = {"USB-C Charging Cable", "Portable Charger"}},

              // Power bank
              {.noun = "Portable Charger",
               .short_noun = "power bank",
               .categories = {"Cell Phones & Accessories", "Accessories", "Portable Power Banks"},
               .price_median = 35,
               .price_spread = 0.5,
               .attributes = {"Capacity", "Wattage", "Color"},
               .features =
                   {
                       "HIGH CAPACITY: A {Capacity} battery keeps your phone and earbuds powered through long days "
                       "away from an outlet",
                       "FAST OUTPUT: {Wattage} USB-C power delivery fast-charges phones, tablets and even some laptops",
                       "CHARGE MULTIPLE DEVICES: Two USB-C ports and one USB-A port power three devices "
                       "simultaneously",
                       "LED DISPLAY: A digital readout shows the exact remaining battery percentage at a glance",
                       "POCKET FRIENDLY: The {Color} {noun} is slim enough for a jacket pocket and approved for "
                       "carry-on luggage",
                   },
               .aspects = {"capacity", "charging speed", "size", "weight", "recharge time"},
               .uses = {"for long travel days", "to keep my phone charged while camping", "for emergencies",
                        "to charge my devices on flights"},
               .complements = {"USB-C Charging Cable"}},

              // Charging cable
              {.noun = "USB-C Charging Cable",
               .short_noun = "charging cable",
               .categories = {"Cell Phones & Accessories", "Accessories", "Cables"},
               .price_median = 12,
               .price_spread = 0.4,
               .attributes = {"Wattage", "Color"},
               .features =
                   {
                       "FAST CHARGING: Supports up to {Wattage} of power delivery for phones, tablets and laptops",
                       "BUILT TO LAST: A braided nylon jacket and reinforced connectors survive more than 20,000 bends",
                       "DATA TRANSFER: Sync photos and files at USB 2.0 speeds of up to 480Mbps",
                       "TANGLE-FREE: The {Color} braided cable resists knots and comes with a reusable cable tie",
                       "MULTI-PACK VALUE: Includes cables in three lengths for your bedside, car and desk",
                   },
               .aspects = {"durability", "charging speed", "length", "connector fit"},
               .uses = {"to replace frayed cables", "for charging in the car", "to reach my bed from the outlet",
                        "for my laptop bag"},
               .complements = {"Fast Wall Charger"}},

              // Tablet
              {.noun = "Android Tablet",
               .short_noun = "tablet",
               .categories = {"Computers & Accessories", "Tablets"},
               .price_median = 179,
               .price_spread = 0.55,
               .attributes = {"Screen Size", "Storage", "Color"},
               .features =
                   {
                       "LARGE DISPLAY: A {Screen Size} Full HD screen is perfect for streaming shows, reading and "
                       "video calls",
                       "STORAGE FOR EVERYTHING: {Storage} of storage, expandable with a microSD card, holds apps, "
                       "books and downloaded movies",
                       "SMOOTH PERFORMANCE: An octa-core processor and 8GB of RAM handle multitasking and casual games",
                       "QUAD SPEAKERS: Four speakers with stereo sound make movies and music feel bigger",
                       "FAMILY FRIENDLY: Parental controls and kids profiles let everyone share one {noun}",
                       "SLIM METAL BODY: A lightweight {Color} aluminum shell is easy to hold with one hand",
                   },
               .aspects = {"screen", "speed", "battery life", "speakers", "storage"},
               .uses = {"for streaming shows in bed", "for my kids' homework", "to read ebooks",
                        "for video calls with family"},
               .complements = {"Wireless Earbuds", "Fast Wall Charger"}},

              // Laptop
              {.noun = "Thin and Light Laptop",
               .short_noun = "laptop",
               .categories = {"Computers & Accessories", "Computers & Tablets", "Laptops"},
               .price_median = 649,
               .price_spread = 0.5,
               .attributes = {"Screen Size", "Storage", "Color", "Battery Life"},
               .features =
                   {
                       "PORTABLE POWER: A {Screen Size} display in a slim, lightweight body that goes wherever you "
                       "work",
                       "FAST STORAGE: A {Storage} SSD boots in seconds and has room for files, photos and software",
                       "ALL-DAY BATTERY: Up to {Battery Life} of battery life for classes, meetings and travel",
                       "RESPONSIVE PERFORMANCE: 16GB of memory and a modern multi-core processor keep dozens of "
                       "browser tabs running smoothly",
                       "COMFORTABLE TYPING: A backlit keyboard and large glass touchpad make long work sessions easier",
                       "PREMIUM FINISH: The {Color} aluminum chassis resists flex and looks sharp in any meeting room",
                   },
               .aspects = {"performance", "battery life", "display", "keyboard", "weight", "speakers"},
               .uses = {"for college classes", "to work from home", "for business travel",
                        "for basic photo editing"},
               .complements = {"Wireless Mouse", "Computer Monitor", "Mechanical Keyboard"}},

              // Monitor
              {.noun = "Computer Monitor",
               .short_noun = "monitor",
               .categories = {"Computers & Accessories", "Monitors"},
               .price_median = 189,
               .price_spread = 0.55,
               .attributes = {"Resolution", "Compatibility"},
               .features =
                   {
                       "SHARP PICTURE: {Resolution} resolution on an IPS panel shows crisp text and accurate colors "
                       "from wide viewing angles",
                       "SMOOTH MOTION: A 144Hz refresh rate and 1ms response time reduce blur in games and fast "
                       "scrolling",
                       "EASY ON THE EYES: A flicker-free backlight and low blue light mode reduce eye strain during "
                       "long workdays",
                       "PLUG AND PLAY: HDMI and DisplayPort inputs work with {Compatibility} and most other devices",
                       "ERGONOMIC STAND: Adjust height, tilt and swivel to find a comfortable position, or use the "
                       "VESA mount",
                   },
               .aspects = {"picture quality", "color accuracy", "stand", "brightness", "refresh rate"},
               .uses = {"for my home office", "to add a second screen", "for gaming", "for photo editing"},
               .complements = {"Mechanical Keyboard", "Wireless Mouse", "HD Webcam"}},

              // Mouse
              {.noun = "Wireless Mouse",
               .short_noun = "mouse",
               .categories = {"Computers & Accessories", "Keyboards, Mice & Accessories", "Mice"},
               .price_median = 25,
               .price_spread = 0.5,
               .attributes = {"Color", "Connectivity", "Compatibility"},
               .features =
                   {
                       "RELIABLE CONNECTION: {Connectivity} keeps the cursor responsive without lag, even from across "
                       "the desk",
                       "ERGONOMIC SHAPE: A contoured grip supports your hand and reduces wrist strain during long "
                       "workdays",
                       "QUIET CLICKS: Silent switches cut click noise by 90 percent, perfect for shared offices and "
                       "libraries",
                       "BROAD COMPATIBILITY: Works with {Compatibility} and most other computers without extra "
                       "software",
                       "LONG BATTERY: A rechargeable battery lasts up to 70 days, and the {Color} {noun} sleeps "
                       "automatically to save power",
                   },
               .aspects = {"comfort", "responsiveness", "click noise", "battery life", "scroll wheel"},
               .uses = {"for my laptop", "to reduce wrist pain", "for working in a quiet office",
                        "for travel with my laptop"},
               .complements = {"Mechanical Keyboard"}},

              // Keyboard
              {.noun = "Mechanical Keyboard",
               .short_noun = "keyboard",
               .categories = {"Computers & Accessories", "Keyboards, Mice & Accessories", "Keyboards"},
               .price_median = 79,
               .price_spread = 0.5,
               .attributes = {"Connectivity", "Compatibility", "Color"},
               .features =
                   {
                       "SATISFYING SWITCHES: Hot-swappable tactile switches give every keystroke crisp feedback for "
                       "typing and gaming",
                       "FLEXIBLE CONNECTION: {Connectivity} lets you switch between devices, with a USB-C cable for "
                       "wired play",
                       "WORKS EVERYWHERE: Dedicated layouts for {Compatibility} and other systems, with easy key "
                       "remapping",
                       "COMPACT LAYOUT: A 75 percent layout frees desk space for your mouse while keeping arrow and "
                       "function keys",
                       "DURABLE KEYCAPS: Double-shot PBT keycaps on the {Color} {noun} resist shine and fading over "
                       "years of use",
                       "CUSTOM BACKLIGHT: Per-key RGB lighting with dozens of effects, adjustable right from the "
                       "keyboard itself",
                   },
               .aspects = {"typing feel", "switch noise", "build quality", "key layout", "lighting"},
               .uses = {"for gaming", "for typing all day", "to upgrade my desk setup", "for programming"},
               .complements = {"Wireless Mouse", "Gaming Headset"}},

              // Webcam
              {.noun = "HD Webcam",
               .short_noun = "webcam",
               .categories = {"Computers & Accessories", "Computer Accessories & Peripherals", "Webcams"},
               .price_median = 45,
               .price_spread = 0.5,
               .attributes = {"Resolution", "Compatibility"},
               .features =
                   {
                       "CLEAR VIDEO: {Resolution} video with autofocus keeps you sharp and well framed on every call",
                       "LOW LIGHT CORRECTION: Automatic light adjustment brightens dim rooms and balances harsh window "
                       "light",
                       "BUILT-IN MICROPHONES: Dual noise-reducing microphones pick up your voice clearly from across "
                       "the desk",
                       "PLUG AND PLAY: Connects over USB and works with {Compatibility} and popular video call apps, "
                       "no drivers needed",
                       "PRIVACY COVER: A sliding shutter blocks the lens whenever the {noun} is not in use",
                   },
               .aspects = {"video quality", "microphone", "low light performance", "mount", "setup"},
               .uses = {"for video calls with family", "for remote work meetings", "to start streaming",
                        "for online classes"},
               .complements = {"Noise Cancelling Headphones", "Computer Monitor"}},

              // Smartwatch
              {.noun = "Fitness Smartwatch",
               .short_noun = "smartwatch",
               .categories = {"Wearable Technology", "Smartwatches"},
               .price_median = 99,
               .price_spread = 0.6,
               .attributes = {"Color", "Battery Life"},
               .features =
                   {
                       "HEALTH TRACKING: Monitor heart rate, blood oxygen, sleep stages and stress levels around the "
                       "clock",
                       "LONG BATTERY: Up to {Battery Life} of use on a charge, so you charge less and track more",
                       "100+ SPORT MODES: Track runs, rides, swims and workouts with built-in GPS for accurate routes",
                       "SMART NOTIFICATIONS: See calls, texts and app alerts on your wrist and control music on your "
                       "phone",
                       "COMFORTABLE BAND: A soft {Color} silicone band and lightweight case are comfortable enough to "
                       "wear to bed",
                       "WATER RESISTANT: 5ATM water resistance handles swimming, showers and rainy runs",
                   },
               .aspects = {"accuracy", "battery life", "display", "comfort", "app"},
               .uses = {"to track my runs", "to monitor my sleep", "for someone starting a fitness routine",
                        "to see notifications without my phone"},
               .complements = {"Wireless Earbuds"}},
          },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Home and Kitchen: cookware, small appliances, bedding, bath and decor.
// ---------------------------------------------------------------------------------------------------------
Category make_home() {
  return Category{
      .main_category = "Amazon Home",
      .paper_name = "Home and Kitchen",
      .top_category = "Home & Kitchen",
      .interest = "home and kitchen essentials",
      .weight = 0.24,
      .attributes =
          {
              {"Color",
               {"Black", "White", "Gray", "Navy", "Sage Green", "Cream", "Charcoal", "Beige", "Blush Pink", "Teal",
                "Red", "Walnut Brown"}},
              {"Material",
               {"Stainless Steel", "Tri-Ply Stainless Steel", "Cast Iron", "Enameled Cast Iron",
                "Hard-Anodized Aluminum", "Ceramic Nonstick", "Carbon Steel", "Copper Core", "Granite Nonstick",
                "Nonstick Aluminum"}},
              {"Fabric",
               {"100% Cotton", "Organic Cotton", "Egyptian Cotton", "Microfiber", "Linen", "Bamboo Viscose",
                "Cotton Blend", "Sateen Cotton", "Percale Cotton", "Flannel", "Jersey Knit", "Brushed Polyester"}},
              {"Capacity",
               {"2 Quart", "3 Quart", "4 Quart", "5 Quart", "5.5 Quart", "6 Quart", "7 Quart", "8 Quart"}},
              {"Set Size",
               {"2-Piece", "3-Piece", "4-Piece", "6-Piece", "8-Piece", "10-Piece", "12-Piece", "15-Piece"}},
              {"Bed Size",
               {"Twin", "Twin XL", "Full", "Queen", "King", "California King", "Full/Queen", "King/California King"}},
              {"Pattern",
               {"Solid", "Striped", "Plaid", "Geometric", "Floral", "Herringbone", "Waffle Weave", "Textured",
                "Chevron", "Moroccan Trellis", "Abstract", "Buffalo Check"}},
              {"Rug Size",
               {"2' x 3'", "3' x 5'", "4' x 6'", "5' x 7'", "5' x 8'", "6' x 9'", "8' x 10'", "9' x 12'",
                "2' x 8' Runner"}},
              {"Power",
               {"700 Watts", "800 Watts", "1000 Watts", "1200 Watts", "1400 Watts", "1500 Watts", "1700 Watts",
                "1800 Watts"}},
          },
      .types =
          {
              // Cookware set
              {.noun = "Pots and Pans Set",
               .short_noun = "pots and pans",
               .categories = {"Kitchen & Dining", "Cookware", "Cookware Sets"},
               .price_median = 129,
               .price_spread = 0.55,
               .attributes = {"Material", "Set Size", "Color"},
               .features =
                   {
                       "COMPLETE SET: This {Set Size} {noun} includes frying pans, saucepans and a stockpot for "
                       "everyday cooking",
                       "EVEN HEATING: {Material} construction spreads heat evenly to prevent hot spots and burnt edges",
                       "STAY-COOL HANDLES: Riveted {Color} handles stay comfortable to hold while you cook on the "
                       "stovetop",
                       "ALL STOVETOPS: Works on gas, electric, ceramic and induction cooktops and is oven safe to 450 "
                       "degrees",
                       "EASY CLEANUP: Food releases easily, and every piece is dishwasher safe for busy weeknights",
                       "SEE-THROUGH LIDS: Tempered glass lids with steam vents let you check food without lifting the "
                       "lid",
                   },
               .aspects = {"heat distribution", "nonstick performance", "weight", "handles", "ease of cleaning"},
               .uses = {"for my first apartment", "to replace my old cookware", "for cooking family dinners",
                        "for a wedding gift"},
               .complements = {"Kitchen Knife Set with Block", "Glass Food Storage Containers with Lids"}},

              // Skillet
              {.noun = "Frying Pan Skillet",
               .short_noun = "frying pan",
               .categories = {"Kitchen & Dining", "Cookware", "Skillets"},
               .price_median = 35,
               .price_spread = 0.55,
               .attributes = {"Material", "Color"},
               .features =
                   {
                       "VERSATILE SKILLET: Sear steaks, fry eggs and saute vegetables in one 12 inch {noun}",
                       "DURABLE BUILD: {Material} construction heats quickly and holds its temperature for a great "
                       "sear",
                       "COMFORT HANDLE: An ergonomic {Color} handle with a hanging loop stays cool on the stove",
                       "OVEN SAFE: Move from stovetop to oven up to 500 degrees to finish frittatas and roasts",
                       "DEEP SIDES: Sloped walls make flipping easy and keep splatter off your stovetop",
                   },
               .aspects = {"nonstick performance", "heat distribution", "weight", "handle", "ease of cleaning"},
               .uses = {"for cooking eggs in the morning", "to sear steaks", "for quick weeknight meals",
                        "for a small kitchen"},
               .complements = {"Saucepan with Lid", "Kitchen Knife Set with Block"}},

              // Dutch oven
              {.noun = "Dutch Oven with Lid",
               .short_noun = "dutch oven",
               .categories = {"Kitchen & Dining", "Cookware", "Dutch Ovens"},
               .price_median = 69,
               .price_spread = 0.5,
               .attributes = {"Capacity", "Color"},
               .features =
                   {
                       "GENEROUS CAPACITY: A {Capacity} pot holds soups, stews, chili and whole chickens for the whole "
                       "family",
                       "ENAMELED CAST IRON: Retains and distributes heat for slow braising, searing and bread baking",
                       "TIGHT-FITTING LID: Self-basting bumps under the lid return moisture to your food for tender "
                       "results",
                       "OVEN TO TABLE: The glossy {Color} enamel looks great on the dinner table and resists chipping",
                       "WIDE HANDLES: Large loop handles give a secure grip, even with thick oven mitts",
                   },
               .aspects = {"heat retention", "weight", "enamel finish", "size", "ease of cleaning"},
               .uses = {"for baking sourdough bread", "to make soups and stews", "for slow braising on weekends",
                        "for a housewarming gift"},
               .complements = {"Frying Pan Skillet"}},

              // Saucepan
              {.noun = "Saucepan with Lid",
               .short_noun = "saucepan",
               .categories = {"Kitchen & Dining", "Cookware", "Saucepans"},
               .price_median = 32,
               .price_spread = 0.5,
               .attributes = {"Material", "Capacity"},
               .features =
                   {
                       "EVERYDAY SIZE: The {Capacity} {noun} is ideal for sauces, grains, pasta and reheating "
                       "leftovers",
                       "EVEN HEATING: {Material} construction heats evenly and responds quickly to temperature changes",
                       "POUR SPOUTS: Dual pour spouts and a strainer lid let you drain pasta without a colander",
                       "MEASURING MARKS: Etched markings inside the pan make it easy to add liquid without a measuring "
                       "cup",
                       "INDUCTION READY: Works on every cooktop and goes in the dishwasher for easy cleanup",
                   },
               .aspects = {"heat distribution", "lid fit", "handle", "size", "ease of cleaning"},
               .uses = {"for cooking rice and pasta", "to make sauces", "for a small household", "to reheat soup"},
               .complements = {"Frying Pan Skillet"}},

              // Knife set
              {.noun = "Kitchen Knife Set with Block",
               .short_noun = "knife set",
               .categories = {"Kitchen & Dining", "Cutlery & Knife Accessories", "Knife Block Sets"},
               .price_median = 79,
               .price_spread = 0.55,
               .attributes = {"Set Size", "Color"},
               .features =
                   {
                       "ESSENTIAL KNIVES: This {Set Size} set covers chopping, slicing, paring and carving, plus "
                       "kitchen shears",
                       "RAZOR SHARP: High-carbon German steel blades are hand-finished to a precise angle for clean "
                       "cuts",
                       "BALANCED HANDLES: Full-tang {Color} handles feel balanced and secure, even when wet",
                       "BUILT-IN SHARPENER: The block includes a sharpening slot so your knives stay keen for years",
                       "SPACE SAVING BLOCK: An angled block keeps blades organized and protected on the countertop",
                   },
               .aspects = {"sharpness", "balance", "edge retention", "handle comfort", "block design"},
               .uses = {"for my first apartment", "to replace dull knives", "for meal prep",
                        "to give a friend who loves to cook"},
               .complements = {"Pots and Pans Set", "Glass Food Storage Containers with Lids"}},

              // Food storage
              {.noun = "Glass Food Storage Containers with Lids",
               .short_noun = "food storage containers",
               .categories = {"Kitchen & Dining", "Storage & Organization", "Food Storage"},
               .price_median = 36,
               .price_spread = 0.45,
               .attributes = {"Set Size", "Color"},
               .features =
                   {
                       "MEAL PREP READY: This {Set Size} set in mixed sizes holds lunches, leftovers and prepped "
                       "ingredients",
                       "LEAKPROOF LIDS: Four locking tabs and a silicone seal keep soups and sauces from spilling in "
                       "your bag",
                       "OVEN TO FRIDGE: Borosilicate glass goes from freezer to oven to microwave without cracking",
                       "STAIN RESISTANT: Glass will not absorb odors or tomato stains the way plastic containers do",
                       "STACKABLE: The {Color} lids snap on securely and the {noun} nest neatly to save cabinet space",
                   },
               .aspects = {"leakproof seal", "lid durability", "size options", "stackability", "weight"},
               .uses = {"for weekly meal prep", "to pack lunches for work", "to keep my kitchen organized",
                        "to store leftovers"},
               .complements = {"Programmable Slow Cooker"}},

              // Air fryer
              {.noun = "Air Fryer",
               .short_noun = "air fryer",
               .categories = {"Kitchen & Dining", "Small Appliances", "Air Fryers"},
               .price_median = 89,
               .price_spread = 0.45,
               .attributes = {"Capacity", "Power", "Color"},
               .features =
                   {
                       "CRISPY WITH LESS OIL: Rapid hot air circulation crisps fries, wings and vegetables using far "
                       "less oil",
                       "FAMILY SIZE: A {Capacity} basket cooks a whole batch of wings or a small chicken at once",
                       "FAST COOKING: {Power} of heating power preheats quickly and cooks most meals in under 25 "
                       "minutes",
                       "ONE-TOUCH PRESETS: Eight presets for fries, chicken, fish, bacon and more take the guesswork "
                       "out of dinner",
                       "EASY CLEANING: The nonstick basket and crisper plate are both dishwasher safe",
                       "COUNTERTOP FRIENDLY: A sleek {Color} finish and compact footprint fit under standard cabinets",
                   },
               .aspects = {"cooking performance", "capacity", "noise", "ease of cleaning", "controls"},
               .uses = {"for quick weeknight dinners", "to cook healthier meals", "for reheating leftovers",
                        "to make crispy snacks"},
               .complements = {"Glass Food Storage Containers with Lids", "Countertop Blender"}},

              // Blender
              {.noun = "Countertop Blender",
               .short_noun = "blender",
               .categories = {"Kitchen & Dining", "Small Appliances", "Blenders"},
               .price_median = 79,
               .price_spread = 0.55,
               .attributes = {"Power", "Color"},
               .features =
                   {
                       "POWERFUL MOTOR: A {Power} motor crushes ice and frozen fruit into smooth drinks in seconds",
                       "LARGE PITCHER: A 64 ounce BPA-free pitcher makes enough frozen drinks for the whole family",
                       "PRESET PROGRAMS: One-touch settings for smoothies, ice crush, soups and pulse deliver "
                       "consistent results",
                       "PERSONAL CUPS: Two to-go cups with lids let you blend and take your smoothie straight out the "
                       "door",
                       "STABLE BASE: Suction feet keep the {Color} {noun} steady on the counter, and parts clean up in "
                       "the dishwasher",
                   },
               .aspects = {"blending power", "noise", "pitcher size", "ease of cleaning", "build quality"},
               .uses = {"for making smoothies every morning", "to crush ice for frozen drinks",
                        "for making soups and sauces", "to blend protein shakes"},
               .complements = {"Glass Food Storage Containers with Lids", "Air Fryer"}},

              // Kettle
              {.noun = "Electric Kettle",
               .short_noun = "electric kettle",
               .categories = {"Kitchen & Dining", "Small Appliances", "Electric Kettles"},
               .price_median = 39,
               .price_spread = 0.5,
               .attributes = {"Power", "Color"},
               .features =
                   {
                       "FAST BOIL: {Power} of heating power boils 1.7 liters of water in about five minutes",
                       "TEMPERATURE CONTROL: Six presets for green tea, oolong, coffee and more, with a keep-warm "
                       "function",
                       "SAFE DESIGN: Automatic shutoff and boil-dry protection switch the {noun} off when it is empty "
                       "or done",
                       "CLEAN WATER PATH: A stainless steel interior with no plastic touching the water for a pure "
                       "taste",
                       "CORDLESS POUR: Lift the {Color} kettle off the 360 degree base and pour from any angle",
                   },
               .aspects = {"boiling speed", "temperature accuracy", "noise", "lid", "build quality"},
               .uses = {"for making tea", "for pour-over coffee", "to boil water quickly for instant meals",
                        "for my office"},
               .complements = {"Drip Coffee Maker"}},

              // Slow cooker
              {.noun = "Programmable Slow Cooker",
               .short_noun = "slow cooker",
               .categories = {"Kitchen & Dining", "Small Appliances", "Slow Cookers"},
               .price_median = 49,
               .price_spread = 0.45,
               .attributes = {"Capacity", "Color"},
               .features =
                   {
                       "SET IT AND FORGET IT: Program cook times up to 20 hours, then it switches to warm "
                       "automatically",
                       "FEEDS A CROWD: The {Capacity} stoneware crock fits a large roast or enough chili for a party",
                       "LOCKING LID: A clip-tight lid and handles make it easy to bring dinner to potlucks without "
                       "spills",
                       "EASY CLEANUP: The removable crock and glass lid are dishwasher safe",
                       "STYLISH BASE: The {Color} exterior looks good on the counter and wipes clean in seconds",
                   },
               .aspects = {"cooking performance", "size", "temperature", "lid seal", "ease of cleaning"},
               .uses = {"for busy weeknights", "to bring dishes to potlucks", "for batch cooking",
                        "to make tender roasts"},
               .complements = {"Glass Food Storage Containers with Lids", "Dutch Oven with Lid"}},

              // Coffee maker
              {.noun = "Drip Coffee Maker",
               .short_noun = "coffee maker",
               .categories = {"Kitchen & Dining", "Coffee, Tea & Espresso", "Drip Coffee Machines"},
               .price_median = 59,
               .price_spread = 0.5,
               .attributes = {"Power", "Color"},
               .features =
                   {
                       "BREWS 12 CUPS: A full carafe of hot coffee is ready in about ten minutes for busy mornings",
                       "PROGRAMMABLE: Set the 24-hour timer the night before and wake up to freshly brewed coffee",
                       "BOLD SETTING: Choose regular or bold strength, and pause brewing mid-cycle to pour a cup",
                       "KEEP WARM: The heating plate keeps coffee hot for up to four hours, then shuts off "
                       "automatically",
                       "RELIABLE HEATER: A {Power} element brews at the right temperature, in a {Color} housing that "
                       "suits any kitchen",
                   },
               .aspects = {"coffee taste", "brew speed", "carafe", "ease of cleaning", "programming"},
               .uses = {"for my morning coffee", "to brew coffee for guests", "for the office break room",
                        "to replace my old coffee machine"},
               .complements = {"Electric Kettle"}},

              // Sheets
              {.noun = "Bed Sheet Set",
               .short_noun = "sheets",
               .categories = {"Bedding", "Sheets & Pillowcases", "Sheet & Pillowcase Sets"},
               .price_median = 39,
               .price_spread = 0.55,
               .attributes = {"Bed Size", "Fabric", "Color"},
               .features =
                   {
                       "SOFT AND BREATHABLE: {Fabric} sheets feel smooth against the skin and help you sleep cool all "
                       "night",
                       "DEEP POCKETS: The {Bed Size} fitted sheet has elastic all around and fits mattresses up to 16 "
                       "inches deep",
                       "COMPLETE SET: Includes a flat sheet, fitted sheet and two pillowcases in a soft {Color} shade",
                       "WRINKLE AND FADE RESISTANT: Colors stay rich and sheets stay smooth wash after wash",
                       "EASY CARE: Machine washable and dryer friendly, getting softer with every wash",
                   },
               .aspects = {"softness", "breathability", "fit", "color", "wrinkles"},
               .uses = {"for hot sleepers", "to refresh my bedroom", "for the guest room", "for a new mattress"},
               .complements = {"Down Alternative Comforter", "Duvet Cover Set"}},

              // Duvet cover
              {.noun = "Duvet Cover Set",
               .short_noun = "duvet cover",
               .categories = {"Bedding", "Duvet Covers & Sets", "Duvet Cover Sets"},
               .price_median = 49,
               .price_spread = 0.5,
               .attributes = {"Bed Size", "Fabric", "Color", "Pattern"},
               .features =
                   {
                       "STYLISH BEDDING: A {Pattern} design in {Color} gives your bedroom a calm, finished look",
                       "SOFT FABRIC: {Fabric} is breathable and gentle on the skin in every season",
                       "PERFECT FIT: Sized for {Bed Size} comforters and includes matching pillow shams",
                       "EASY TO USE: A hidden zipper closure and eight corner ties keep the comforter from shifting "
                       "inside",
                       "MACHINE WASHABLE: Protect your comforter and simply toss the {noun} in the wash",
                   },
               .aspects = {"softness", "color", "zipper", "fit", "fabric quality"},
               .uses = {"to update my bedroom decor", "to protect my comforter", "for the guest room",
                        "for a new apartment"},
               .complements = {"Down Alternative Comforter", "Bed Sheet Set"}},

              // Comforter
              {.noun = "Down Alternative Comforter",
               .short_noun = "comforter",
               .categories = {"Bedding", "Comforters & Sets", "Comforters"},
               .price_median = 45,
               .price_spread = 0.5,
               .attributes = {"Bed Size", "Color"},
               .features =
                   {
                       "ALL-SEASON WARMTH: Medium-weight fill keeps you cozy in winter without overheating in summer",
                       "HYPOALLERGENIC FILL: Plush down alternative microfiber is a great choice for allergy "
                       "sufferers",
                       "STAYS IN PLACE: Box-stitched construction keeps the fill evenly spread, with corner loops for "
                       "a duvet cover",
                       "SIZED RIGHT: The {Bed Size} comforter drapes generously over the sides of the bed",
                       "MACHINE WASHABLE: The {Color} {noun} holds its loft after washing and tumble drying on low",
                   },
               .aspects = {"warmth", "softness", "fluffiness", "weight", "size"},
               .uses = {"for cold winter nights", "for someone with allergies", "for the guest room",
                        "to use inside a duvet cover"},
               .complements = {"Duvet Cover Set", "Bed Sheet Set"}},

              // Towels
              {.noun = "Bath Towel Set",
               .short_noun = "towels",
               .categories = {"Bath", "Towels", "Bath Towels"},
               .price_median = 35,
               .price_spread = 0.5,
               .attributes = {"Set Size", "Color", "Pattern"},
               .features =
                   {
                       "PLUSH AND ABSORBENT: Thick 600 GSM cotton loops soak up water quickly and feel soft after "
                       "every shower",
                       "COMPLETE SET: This {Set Size} set includes bath towels, hand towels and washcloths for the "
                       "whole bathroom",
                       "QUICK DRYING: Ring-spun cotton dries faster between uses and resists musty smells",
                       "BATHROOM STYLE: A {Pattern} weave in {Color} adds a spa-like touch to your bathroom",
                       "LINT FREE: Pre-washed towels with double-stitched edges reduce lint and prevent fraying",
                   },
               .aspects = {"softness", "absorbency", "lint", "color", "drying time"},
               .uses = {"for a new bathroom", "to replace old rough towels", "for the guest bathroom",
                        "for a housewarming gift"},
               .complements = {"Bed Sheet Set"}},

              // Throw
              {.noun = "Throw Blanket",
               .short_noun = "throw blanket",
               .categories = {"Bedding", "Blankets & Throws", "Throws"},
               .price_median = 29,
               .price_spread = 0.5,
               .attributes = {"Color", "Pattern"},
               .features =
                   {
                       "CLOUD SOFT: Plush flannel fleece feels warm and cozy without being heavy",
                       "COUCH SIZED: At 50 by 60 inches, the {noun} is perfect for curling up on the sofa",
                       "DECORATIVE LOOK: A {Pattern} texture in {Color} adds warmth to a couch, bed or reading chair",
                       "NO SHEDDING: Durable knit construction resists pilling and shedding wash after wash",
                       "EASY CARE: Machine washable on cold and safe to tumble dry on low heat",
                   },
               .aspects = {"softness", "warmth", "size", "shedding", "color"},
               .uses = {"for movie nights on the couch", "to add color to my living room", "for chilly evenings",
                        "to give as a cozy gift"},
               .complements = {"Area Rug", "Down Alternative Comforter"}},

              // Rug
              {.noun = "Area Rug",
               .short_noun = "rug",
               .categories = {"Home Decor Products", "Area Rugs, Runners & Pads", "Area Rugs"},
               .price_median = 89,
               .price_spread = 0.65,
               .attributes = {"Rug Size", "Color", "Pattern"},
               .features =
                   {
                       "STATEMENT PIECE: A {Pattern} design in {Color} anchors your living room, bedroom or dining "
                       "area",
                       "LOW PILE: A low profile pile slides under doors and is easy to vacuum",
                       "PET AND KID FRIENDLY: Stain-resistant fibers stand up to spills, paws and heavy foot traffic",
                       "NON-SHEDDING: Power-loomed construction keeps fibers in place instead of on your floor",
                       "SIZED TO FIT: Measuring {Rug Size}, the {noun} fits nicely under a sofa, bed or dining table",
                   },
               .aspects = {"color", "softness", "thickness", "shedding", "size"},
               .uses = {"for my living room", "to cover hardwood floors", "to warm up a bedroom",
                        "for a home with pets"},
               .complements = {"Throw Blanket"}},
          },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Grocery and Gourmet Food: coffee, tea, snacks, sweets and pantry staples.
// ---------------------------------------------------------------------------------------------------------
Category make_grocery() {
  return Category{
      .main_category = "Grocery",
      .paper_name = "Grocery and Gourmet Food",
      .top_category = "Grocery & Gourmet Food",
      .interest = "gourmet snacks and pantry staples",
      .weight = 0.16,
      .attributes =
          {
              {"Flavor",
               {"Sea Salt", "Barbecue", "Sour Cream & Onion", "White Cheddar", "Jalapeno Lime", "Sweet Chili",
                "Salt & Vinegar", "Garlic Parmesan", "Everything Bagel", "Original", "Smoky Chipotle",
                "Himalayan Pink Salt"}},
              {"Sweet Flavor",
               {"Salted Caramel", "Peanut Butter", "Vanilla Bean", "Cinnamon", "Honey Almond", "Mixed Berry",
                "Toasted Coconut", "Maple Pecan", "Lemon Zest", "Strawberry", "Mint", "Hazelnut", "Cherry"}},
              {"Roast Level",
               {"Light Roast", "Medium Roast", "Medium-Dark Roast", "Dark Roast", "French Roast", "Espresso Roast",
                "Italian Roast", "Breakfast Blend", "Blonde Roast"}},
              {"Size",
               {"4 Ounce", "8 Ounce", "10 Ounce", "12 Ounce", "16 Ounce", "24 Ounce", "32 Ounce", "2 Pound",
                "5 Pound"}},
              {"Pack Size",
               {"Pack of 1", "Pack of 2", "Pack of 3", "Pack of 4", "Pack of 6", "Pack of 12", "Pack of 24",
                "Pack of 36"}},
              {"Diet Type",
               {"Organic", "Gluten-Free", "Non-GMO", "Vegan", "Keto-Friendly", "Kosher", "Plant-Based",
                "Low Sodium", "No Added Sugar", "Fair Trade Certified"}},
              {"Origin",
               {"Colombia", "Ethiopia", "Guatemala", "Sumatra", "Kenya", "Peru", "Brazil", "Costa Rica", "Honduras",
                "Mexico", "Nicaragua", "Rwanda"}},
              {"Packaging Type",
               {"Resealable Bag", "Stand-Up Pouch", "Canister", "Tin", "Glass Jar", "Gift Box", "Bulk Bag",
                "Recyclable Box"}},
              {"Herbal Blend",
               {"Chamomile", "Peppermint", "Lemon Ginger", "Hibiscus Berry", "Rooibos Vanilla", "Lavender Mint",
                "Turmeric Ginger", "Cinnamon Apple", "Lemon Balm", "Echinacea", "Spearmint", "Holy Basil"}},
          },
      .types =
          {
              // Dark roast ground coffee
              {.noun = "Dark Roast Ground Coffee",
               .short_noun = "dark roast coffee",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Ground Coffee"},
               .price_median = 14,
               .price_spread = 0.4,
               .attributes = {"Origin", "Size", "Diet Type"},
               .features =
                   {
                       "BOLD AND SMOOTH: A dark roast with notes of cocoa and toasted nuts and a smooth, low-acid "
                       "finish",
                       "SINGLE ORIGIN: 100 percent arabica beans sourced from small farms in {Origin}",
                       "GROUND FOR DRIP: A medium grind that works in drip machines, pour-over cones and French "
                       "presses",
                       "FRESHNESS SEALED: Roasted in small batches and packed in a {Size} bag with a one-way valve",
                       "RESPONSIBLY GROWN: {Diet Type} coffee sourced from growers who are paid fairly for their "
                       "harvest",
                   },
               .aspects = {"flavor", "aroma", "bitterness", "freshness", "strength"},
               .uses = {"for my morning coffee", "to brew strong coffee", "for the office coffee maker",
                        "for someone who loves bold coffee"},
               .complements = {"Medium Roast Ground Coffee", "Dark Chocolate Bar"}},

              // Medium roast ground coffee
              {.noun = "Medium Roast Ground Coffee",
               .short_noun = "medium roast coffee",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Ground Coffee"},
               .price_median = 13,
               .price_spread = 0.4,
               .attributes = {"Origin", "Size", "Packaging Type"},
               .features =
                   {
                       "BALANCED FLAVOR: A medium roast with caramel sweetness, bright acidity and a clean finish",
                       "ARABICA BEANS: Grown at high altitude in {Origin} and roasted to bring out natural sweetness",
                       "EVERYDAY COFFEE: A smooth, crowd-pleasing cup that works in drip makers and pour-over brewers",
                       "FRESH PACKAGING: Each {Size} {Packaging Type} locks in aroma until your very last scoop",
                       "GREAT ANY TIME: Mild enough for afternoon cups and flavorful enough to drink black",
                   },
               .aspects = {"flavor", "aroma", "acidity", "freshness", "smoothness"},
               .uses = {"for everyday drinking", "to share with guests", "for a smooth cup of coffee",
                        "for the office"},
               .complements = {"Chewy Granola Bars", "Dark Roast Ground Coffee"}},

              // Whole bean coffee
              {.noun = "Whole Bean Coffee",
               .short_noun = "coffee beans",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Whole Coffee Beans"},
               .price_median = 17,
               .price_spread = 0.45,
               .attributes = {"Roast Level", "Origin", "Size"},
               .features =
                   {
                       "FRESHLY ROASTED: A {Roast Level} of whole beans that you grind right before brewing for peak "
                       "flavor",
                       "TRACEABLE ORIGIN: Specialty grade arabica from family farms in {Origin}",
                       "TASTING NOTES: Expect notes of dark chocolate, brown sugar and stone fruit with a syrupy body",
                       "VERSATILE: Grind coarse for French press, medium for drip or fine for espresso",
                       "BIG BAG: A {Size} bag with a degassing valve keeps the {noun} fresh for weeks",
                   },
               .aspects = {"flavor", "aroma", "freshness", "roast consistency", "bean quality"},
               .uses = {"for my espresso machine", "to grind fresh every morning", "for a coffee lover",
                        "for French press coffee"},
               .complements = {"Dark Chocolate Bar", "Single-Serve Coffee Pods"}},

              // Coffee pods
              {.noun = "Single-Serve Coffee Pods",
               .short_noun = "coffee pods",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Single-Serve Capsules & Pods"},
               .price_median = 22,
               .price_spread = 0.4,
               .attributes = {"Roast Level", "Pack Size", "Sweet Flavor"},
               .features =
                   {
                       "QUICK CUP: Compatible with most single-serve brewers for a fresh cup in under a minute",
                       "FLAVOR YOU LOVE: A {Roast Level} coffee with a touch of {Sweet Flavor} flavor and no added "
                       "sugar",
                       "VALUE PACK: {Pack Size} boxes of pods keeps your kitchen or office stocked for weeks",
                       "RECYCLABLE PODS: Peel the lid, empty the grounds and recycle the pod with your plastics",
                       "CONSISTENT BREW: Every pod is nitrogen flushed to stay fresh until the moment you brew it",
                   },
               .aspects = {"flavor", "strength", "aroma", "compatibility", "value"},
               .uses = {"for a quick morning cup", "for the office break room",
                        "for guests who like flavored coffee", "to avoid brewing a full pot"},
               .complements = {"Cold Brew Coffee Concentrate", "Chewy Granola Bars"}},

              // Cold brew
              {.noun = "Cold Brew Coffee Concentrate",
               .short_noun = "cold brew",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Cold Brew Coffee"},
               .price_median = 12,
               .price_spread = 0.4,
               .attributes = {"Roast Level", "Size", "Diet Type"},
               .features =
                   {
                       "SMOOTH COLD BREW: Steeped for 20 hours from a {Roast Level} for a rich, low-acid coffee",
                       "JUST ADD WATER: Mix one part concentrate with one part water or milk and pour over ice",
                       "MAKES MORE: A {Size} bottle makes up to 16 iced coffees at home",
                       "CLEAN INGREDIENTS: Just coffee and water, {Diet Type} and free of preservatives",
                       "CAFE QUALITY: Enjoy coffee shop iced coffee at home without the line or the price",
                   },
               .aspects = {"flavor", "strength", "smoothness", "acidity", "value"},
               .uses = {"for iced coffee in the summer", "to skip the coffee shop", "for a quick caffeine boost",
                        "to make coffee cocktails"},
               .complements = {"Single-Serve Coffee Pods", "Chewy Granola Bars"}},

              // Green tea
              {.noun = "Green Tea Bags",
               .short_noun = "green tea",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Green Tea"},
               .price_median = 9,
               .price_spread = 0.4,
               .attributes = {"Pack Size", "Diet Type"},
               .features =
                   {
                       "CLEAN AND FRESH: Delicate green tea with a grassy, lightly sweet flavor and no bitterness when "
                       "steeped right",
                       "NATURAL ENERGY: Gentle caffeine and antioxidants for a calm, focused lift without the jitters",
                       "VALUE BOX: {Pack Size} boxes of individually wrapped bags stay fresh in your desk or pantry",
                       "QUALITY LEAVES: {Diet Type} whole leaf tea packed in plastic-free pyramid bags",
                       "EASY TO BREW: Steep for two to three minutes in water just below boiling",
                   },
               .aspects = {"flavor", "freshness", "bitterness", "aroma", "strength"},
               .uses = {"for an afternoon pick-me-up", "to replace my second coffee", "for iced tea",
                        "to relax after dinner"},
               .complements = {"Raw Wildflower Honey", "Herbal Tea Bags"}},

              // Herbal tea
              {.noun = "Herbal Tea Bags",
               .short_noun = "herbal tea",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Herbal Tea"},
               .price_median = 8,
               .price_spread = 0.4,
               .attributes = {"Herbal Blend", "Pack Size", "Diet Type"},
               .features =
                   {
                       "SOOTHING BLEND: A caffeine-free {Herbal Blend} infusion made from whole herbs and botanicals",
                       "CAFFEINE FREE: Perfect for evenings, bedtime routines or anyone cutting back on caffeine",
                       "PANTRY PACK: {Pack Size} boxes of individually wrapped bags keep the flavor locked in",
                       "PURE INGREDIENTS: {Diet Type} with no artificial flavors, colors or sweeteners",
                       "HOT OR ICED: Steep five minutes in boiling water, or cold brew overnight for a refreshing iced "
                       "tea",
                   },
               .aspects = {"flavor", "aroma", "strength", "freshness", "calming effect"},
               .uses = {"to help me unwind at night", "for a caffeine-free evening drink", "to soothe my throat",
                        "for iced tea"},
               .complements = {"Raw Wildflower Honey", "Green Tea Bags"}},

              // Matcha
              {.noun = "Matcha Green Tea Powder",
               .short_noun = "matcha",
               .categories = {"Beverages", "Coffee, Tea & Cocoa", "Matcha"},
               .price_median = 24,
               .price_spread = 0.5,
               .attributes = {"Size", "Diet Type", "Packaging Type"},
               .features =
                   {
                       "CEREMONIAL QUALITY: Stone-ground shade-grown tea leaves give a vibrant green color and smooth "
                       "umami taste",
                       "LATTES AND MORE: Whisk into hot water, blend into lattes and smoothies, or bake into desserts",
                       "STEADY ENERGY: Natural caffeine balanced with L-theanine for calm focus without a crash",
                       "PURE MATCHA: {Diet Type} with nothing added, just finely ground green tea leaves",
                       "STAYS FRESH: A {Size} {Packaging Type} protects the delicate powder from light and air",
                   },
               .aspects = {"flavor", "color", "bitterness", "mixability", "freshness"},
               .uses = {"to make matcha lattes at home", "to replace my morning coffee", "for baking",
                        "for smoothies"},
               .complements = {"Raw Wildflower Honey", "Green Tea Bags"}},

              // Potato chips
              {.noun = "Kettle Cooked Potato Chips",
               .short_noun = "potato chips",
               .categories = {"Snacks & Sweets", "Chips & Crisps", "Potato Chips"},
               .price_median = 18,
               .price_spread = 0.45,
               .attributes = {"Flavor", "Size", "Pack Size"},
               .features =
                   {
                       "EXTRA CRUNCHY: Thick-cut potatoes are kettle cooked in small batches for a hearty crunch",
                       "BOLD FLAVOR: Seasoned with {Flavor} that you can taste in every single chip",
                       "SNACK BAGS: {Pack Size} of {Size} bags for lunches, road trips and parties",
                       "SIMPLE INGREDIENTS: Made with real potatoes and sunflower oil, with no artificial flavors",
                       "GLUTEN FREE: A gluten-free snack that pairs well with sandwiches and dips",
                   },
               .aspects = {"crunch", "flavor", "saltiness", "freshness", "greasiness"},
               .uses = {"for lunchboxes", "to snack on during movie night", "for parties",
                        "to pair with sandwiches"},
               .complements = {"Tortilla Chips", "Roasted Mixed Nuts"}},

              // Tortilla chips
              {.noun = "Tortilla Chips",
               .short_noun = "tortilla chips",
               .categories = {"Snacks & Sweets", "Chips & Crisps", "Tortilla Chips"},
               .price_median = 15,
               .price_spread = 0.45,
               .attributes = {"Flavor", "Pack Size", "Diet Type"},
               .features =
                   {
                       "RESTAURANT STYLE: Thin, crisp triangles made from stone-ground corn for dipping and nachos",
                       "ZESTY TASTE: {Flavor} seasoning adds flavor without overpowering your favorite salsa",
                       "STURDY CHIPS: Built to scoop thick dips and guacamole without breaking",
                       "BETTER INGREDIENTS: {Diet Type} corn chips cooked in avocado oil",
                       "PARTY READY: {Pack Size} of family-size bags keeps game day and gatherings covered",
                   },
               .aspects = {"crunch", "flavor", "saltiness", "sturdiness", "freshness"},
               .uses = {"for game day snacks", "to serve with salsa and guacamole", "for making nachos",
                        "for parties"},
               .complements = {"Kettle Cooked Potato Chips", "Microwave Popcorn"}},

              // Mixed nuts
              {.noun = "Roasted Mixed Nuts",
               .short_noun = "mixed nuts",
               .categories = {"Snacks & Sweets", "Nuts & Seeds", "Mixed Nuts"},
               .price_median = 16,
               .price_spread = 0.45,
               .attributes = {"Flavor", "Size", "Packaging Type"},
               .features =
                   {
                       "PREMIUM MIX: Cashews, almonds, pecans, pistachios and hazelnuts with no peanut filler",
                       "SEASONED RIGHT: Dry roasted and tossed with {Flavor} seasoning for a savory crunch",
                       "PROTEIN SNACK: Six grams of plant protein per serving keeps you full between meals",
                       "KEEPS FRESH: A {Size} {Packaging Type} keeps the nuts crunchy long after opening",
                       "SHAREABLE: Great for office snack drawers, hiking trips and holiday gatherings",
                   },
               .aspects = {"freshness", "flavor", "saltiness", "nut variety", "crunch"},
               .uses = {"for healthy snacking at work", "to take on hikes", "for holiday parties",
                        "for a protein-rich snack"},
               .complements = {"Dark Chocolate Bar", "Chewy Granola Bars"}},

              // Popcorn
              {.noun = "Microwave Popcorn",
               .short_noun = "popcorn",
               .categories = {"Snacks & Sweets", "Popcorn", "Microwave Popcorn"},
               .price_median = 12,
               .price_spread = 0.4,
               .attributes = {"Flavor", "Pack Size"},
               .features =
                   {
                       "MOVIE NIGHT READY: Pops in about two minutes with very few unpopped kernels",
                       "FULL FLAVOR: Whole grain kernels coated in {Flavor} seasoning for a satisfying snack",
                       "WHOLE GRAIN: A whole grain snack with fiber and no artificial preservatives",
                       "PANTRY SUPPLY: {Pack Size} of three-bag boxes keeps movie nights stocked",
                       "PORTION SIZED: Each bag makes about six cups, perfect for sharing or a solo treat",
                   },
               .aspects = {"flavor", "unpopped kernels", "saltiness", "crunch", "freshness"},
               .uses = {"for movie night", "for an after-school snack", "to share with friends",
                        "for the office microwave"},
               .complements = {"Kettle Cooked Potato Chips", "Dark Chocolate Bar"}},

              // Chocolate
              {.noun = "Dark Chocolate Bar",
               .short_noun = "chocolate",
               .categories = {"Snacks & Sweets", "Chocolate", "Chocolate Bars"},
               .price_median = 14,
               .price_spread = 0.5,
               .attributes = {"Sweet Flavor", "Pack Size", "Diet Type"},
               .features =
                   {
                       "RICH DARK CHOCOLATE: 72 percent cacao with a smooth melt and deep, fruity notes",
                       "DELICIOUS INCLUSIONS: Studded with {Sweet Flavor} pieces for extra texture and sweetness",
                       "THOUGHTFUL INGREDIENTS: {Diet Type} chocolate sweetened with organic cane sugar",
                       "SNACK OR SHARE: {Pack Size} of bars, each scored into easy-to-break squares",
                       "ETHICALLY SOURCED: Cacao bought directly from farming cooperatives at fair prices",
                   },
               .aspects = {"taste", "sweetness", "texture", "bitterness", "freshness"},
               .uses = {"for an afternoon treat", "to give a chocolate lover", "to satisfy my sweet tooth",
                        "for baking"},
               .complements = {"Roasted Mixed Nuts", "Whole Bean Coffee"}},

              // Granola bars
              {.noun = "Chewy Granola Bars",
               .short_noun = "granola bars",
               .categories = {"Snacks & Sweets", "Snack Bars", "Granola Bars"},
               .price_median = 13,
               .price_spread = 0.4,
               .attributes = {"Sweet Flavor", "Pack Size", "Diet Type"},
               .features =
                   {
                       "WHOLESOME ENERGY: Whole grain oats, nuts and honey make a chewy bar that keeps you going",
                       "KID APPROVED: A {Sweet Flavor} flavor that kids and adults both love",
                       "GRAB AND GO: {Pack Size} of individually wrapped bars for lunchboxes, backpacks and gym bags",
                       "SIMPLE INGREDIENTS: {Diet Type} with no artificial flavors or high fructose corn syrup",
                       "BALANCED SNACK: Eight grams of whole grains and four grams of protein in every bar",
                   },
               .aspects = {"taste", "texture", "sweetness", "ingredients", "size"},
               .uses = {"for kids' lunchboxes", "for a quick breakfast", "to snack on after workouts",
                        "for hiking trips"},
               .complements = {"Crunchy Granola Cereal", "Roasted Mixed Nuts"}},

              // Granola cereal
              {.noun = "Crunchy Granola Cereal",
               .short_noun = "granola",
               .categories = {"Breakfast Foods", "Cereals", "Granola"},
               .price_median = 9,
               .price_spread = 0.4,
               .attributes = {"Sweet Flavor", "Size", "Diet Type"},
               .features =
                   {
                       "BIG CLUSTERS: Baked slowly for big, crunchy clusters of oats, seeds and nuts",
                       "IRRESISTIBLE FLAVOR: {Sweet Flavor} flavor in every handful, lightly sweetened with maple "
                       "syrup",
                       "BREAKFAST YOUR WAY: Enjoy with milk, sprinkle over yogurt or eat straight from the bag",
                       "BETTER FOR YOU: {Diet Type} granola made with whole grains and plant protein",
                       "FAMILY SIZE: A {Size} resealable bag keeps the {noun} crunchy all week",
                   },
               .aspects = {"taste", "crunch", "sweetness", "cluster size", "ingredients"},
               .uses = {"for a quick breakfast", "to top my yogurt", "for a healthy snack", "for busy mornings"},
               .complements = {"Raw Wildflower Honey", "Chewy Granola Bars"}},

              // Olive oil
              {.noun = "Extra Virgin Olive Oil",
               .short_noun = "olive oil",
               .categories = {"Pantry Staples", "Cooking Oils", "Olive Oil"},
               .price_median = 18,
               .price_spread = 0.5,
               .attributes = {"Size", "Diet Type"},
               .features =
                   {
                       "COLD PRESSED: First cold pressed from early harvest olives for a fresh, peppery flavor",
                       "KITCHEN ESSENTIAL: Ideal for salad dressings, roasting vegetables, sauteing and dipping bread",
                       "DARK GLASS BOTTLE: A {Size} dark bottle protects the oil from light to preserve its flavor",
                       "PURE AND SIMPLE: {Diet Type} single-source oil that is never blended with seed oils",
                       "HARVEST DATED: Every bottle lists its harvest date so you know exactly how fresh it is",
                   },
               .aspects = {"flavor", "freshness", "aroma", "bottle", "color"},
               .uses = {"for salad dressings", "for everyday cooking", "for dipping bread",
                        "to give a friend who loves to cook"},
               .complements = {"Raw Wildflower Honey"}},

              // Honey
              {.noun = "Raw Wildflower Honey",
               .short_noun = "honey",
               .categories = {"Pantry Staples", "Sweeteners", "Honey"},
               .price_median = 15,
               .price_spread = 0.45,
               .attributes = {"Size", "Origin"},
               .features =
                   {
                       "RAW AND UNFILTERED: Never heated or filtered, so natural pollen and enzymes remain",
                       "FLORAL FLAVOR: Gathered by small beekeepers in {Origin} for a rich, complex sweetness",
                       "EASY POUR: A {Size} squeeze bottle with a drip-free cap for tea, toast and oatmeal",
                       "NATURAL SWEETENER: Pure honey with nothing added, a great swap for refined sugar",
                       "CRYSTALLIZATION IS NATURAL: Simply warm the bottle in water to return the {noun} to liquid",
                   },
               .aspects = {"taste", "sweetness", "texture", "crystallization", "purity"},
               .uses = {"to sweeten my tea", "for baking", "to drizzle on oatmeal", "to soothe a sore throat"},
               .complements = {"Herbal Tea Bags", "Crunchy Granola Cereal"}},
          },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Clothing, Shoes and Jewelry: shoes, tops, bottoms, outerwear, jewelry and accessories.
// ---------------------------------------------------------------------------------------------------------
Category make_fashion() {
  return Category{
      .main_category = "AMAZON FASHION",
      .paper_name = "Clothing, Shoes and Jewelry",
      .top_category = "Clothing, Shoes & Jewelry",
      .interest = "clothing and accessories",
      .weight = 0.20,
      .attributes =
          {
              {"Color",
               {"Black", "White", "Navy", "Heather Gray", "Olive", "Burgundy", "Khaki", "Charcoal", "Royal Blue",
                "Dusty Rose", "Camel", "Forest Green", "Cream"}},
              {"Material",
               {"Cotton", "Organic Cotton", "Cotton Blend", "Polyester Blend", "Modal", "Linen Blend", "Rayon",
                "Bamboo Viscose", "Tri-Blend", "Jersey Knit", "Pima Cotton", "Slub Cotton"}},
              {"Size",
               {"X-Small", "Small", "Medium", "Large", "X-Large", "XX-Large", "3X-Large", "Small Petite",
                "Large Tall"}},
              {"Shoe Size",
               {"US 6", "US 6.5", "US 7", "US 7.5", "US 8", "US 8.5", "US 9", "US 9.5", "US 10", "US 10.5", "US 11",
                "US 12"}},
              {"Upper Material",
               {"Breathable Mesh", "Engineered Knit", "Full-Grain Leather", "Suede", "Canvas", "Synthetic Leather",
                "Nubuck", "Water-Resistant Nylon"}},
              {"Fit",
               {"Regular Fit", "Slim Fit", "Relaxed Fit", "Athletic Fit", "Oversized Fit", "Classic Fit", "Loose Fit",
                "Tailored Fit", "Modern Fit"}},
              {"Pattern",
               {"Solid", "Striped", "Plaid", "Floral", "Heathered", "Camo", "Color Block", "Polka Dot", "Paisley",
                "Tie-Dye", "Houndstooth", "Geometric"}},
              {"Metal",
               {"Sterling Silver", "14K Gold Plated", "18K Gold Plated", "Rose Gold Plated", "Stainless Steel",
                "Titanium", "White Gold Plated", "Solid 10K Gold"}},
              {"Stone",
               {"Cubic Zirconia", "Freshwater Pearl", "Moissanite", "Birthstone", "Opal", "Turquoise", "Amethyst",
                "Lab-Grown Sapphire"}},
          },
      .types =
          {
              // Women's running shoes
              {.noun = "Women's Running Shoes",
               .short_noun = "running shoes",
               .categories = {"Women", "Shoes", "Athletic"},
               .price_median = 79,
               .price_spread = 0.45,
               .attributes = {"Color", "Shoe Size", "Upper Material"},
               .features =
                   {
                       "RESPONSIVE CUSHIONING: A lightweight foam midsole absorbs impact and returns energy with every "
                       "stride",
                       "BREATHABLE UPPER: A {Upper Material} upper keeps feet cool and dry on long runs",
                       "SECURE FIT: A padded collar and molded heel counter lock your foot in place without pinching",
                       "DURABLE GRIP: A rubber outsole with flex grooves grips roads, tracks and treadmills",
                       "EVERYDAY STYLE: The {Color} colorway pairs as well with jeans as it does with leggings",
                       "LIGHTWEIGHT: Weighing under eight ounces, the {noun} feel fast without sacrificing support",
                   },
               .aspects = {"comfort", "fit", "cushioning", "support", "sizing", "breathability"},
               .uses = {"for my morning runs", "for training for a 5K", "for long walks", "for gym workouts"},
               .complements = {"Women's High Waisted Leggings", "Women's Short Sleeve T-Shirt"}},

              // Men's running shoes
              {.noun = "Men's Running Shoes",
               .short_noun = "running shoes",
               .categories = {"Men", "Shoes", "Athletic"},
               .price_median = 85,
               .price_spread = 0.45,
               .attributes = {"Color", "Shoe Size", "Upper Material"},
               .features =
                   {
                       "CUSHIONED RIDE: Thick foam cushioning softens every landing for comfortable high-mileage "
                       "training",
                       "BREATHABLE COMFORT: A {Upper Material} upper with a roomy toe box lets feet spread naturally",
                       "STABLE PLATFORM: A wide base and firm heel support help keep your stride steady",
                       "TRACTION: Durable rubber pods at key wear zones provide grip on wet and dry pavement",
                       "STANDOUT LOOK: A {Color} design with reflective details for visibility on early-morning runs",
                   },
               .aspects = {"comfort", "fit", "cushioning", "durability", "sizing", "support"},
               .uses = {"for marathon training", "for running on the treadmill", "for standing all day at work",
                        "for daily walks"},
               .complements = {"Men's Crew Neck T-Shirt", "Men's Pullover Hoodie"}},

              // Women's sneakers
              {.noun = "Women's Slip-On Sneakers",
               .short_noun = "sneakers",
               .categories = {"Women", "Shoes", "Fashion Sneakers"},
               .price_median = 45,
               .price_spread = 0.45,
               .attributes = {"Color", "Shoe Size", "Upper Material"},
               .features =
                   {
                       "EASY ON AND OFF: A stretchy collar and elastic gores let you slip these sneakers on hands-free",
                       "ALL-DAY COMFORT: A memory foam insole cushions every step from morning errands to evening "
                       "walks",
                       "CASUAL STYLE: A clean {Color} {Upper Material} upper goes with jeans, dresses and everything "
                       "in between",
                       "FLEXIBLE SOLE: A lightweight, flexible rubber outsole bends naturally with your foot",
                       "MACHINE WASHABLE: Toss the {noun} in the washer on a gentle cycle and let them air dry",
                   },
               .aspects = {"comfort", "fit", "sizing", "style", "arch support"},
               .uses = {"for running errands", "for travel days", "for standing at work", "for casual outfits"},
               .complements = {"Women's Crossbody Bag", "Women's Short Sleeve T-Shirt"}},

              // Men's boots
              {.noun = "Men's Chelsea Boots",
               .short_noun = "chelsea boots",
               .categories = {"Men", "Shoes", "Boots"},
               .price_median = 99,
               .price_spread = 0.5,
               .attributes = {"Color", "Shoe Size"},
               .features =
                   {
                       "TIMELESS DESIGN: A classic Chelsea silhouette with elastic side panels dresses up or down "
                       "easily",
                       "PULL-ON CONVENIENCE: Front and back pull tabs make getting the boots on quick and easy",
                       "CUSHIONED FOOTBED: A removable padded insole adds comfort for long days on your feet",
                       "GRIPPY OUTSOLE: A stacked heel and rubber outsole with a subtle lug pattern grip slick "
                       "sidewalks",
                       "VERSATILE COLOR: {Color} leather pairs with jeans, chinos and suits alike",
                   },
               .aspects = {"comfort", "fit", "sizing", "leather quality", "break-in period"},
               .uses = {"for the office", "to wear with jeans on weekends", "for fall and winter",
                        "for a wedding"},
               .complements = {"Men's Stretch Jeans", "Men's Dress Belt"}},

              // Women's tee
              {.noun = "Women's Short Sleeve T-Shirt",
               .short_noun = "t-shirt",
               .categories = {"Women", "Clothing", "Tops, Tees & Blouses"},
               .price_median = 19,
               .price_spread = 0.4,
               .attributes = {"Color", "Size", "Material", "Fit"},
               .features =
                   {
                       "SOFT FABRIC: Lightweight {Material} feels soft and breathable all day long",
                       "FLATTERING CUT: A {Fit} with a relaxed crew neckline that works tucked or untucked",
                       "WARDROBE STAPLE: The {Color} tee layers easily under cardigans, blazers and jackets",
                       "HOLDS ITS SHAPE: Pre-shrunk fabric and double-stitched hems keep their shape wash after wash",
                       "EASY CARE: Machine wash cold with like colors and tumble dry low",
                   },
               .aspects = {"fit", "fabric softness", "sizing", "color", "thickness"},
               .uses = {"for everyday wear", "for layering", "for summer", "for casual Fridays at work"},
               .complements = {"Women's High Waisted Leggings"}},

              // Men's tee
              {.noun = "Men's Crew Neck T-Shirt",
               .short_noun = "t-shirt",
               .categories = {"Men", "Clothing", "Shirts"},
               .price_median = 18,
               .price_spread = 0.4,
               .attributes = {"Color", "Size", "Fit", "Material"},
               .features =
                   {
                       "EVERYDAY TEE: A {Fit} crew neck tee in soft {Material} that is comfortable from morning to "
                       "night",
                       "TAGLESS COMFORT: Printed labels mean no scratchy tags against your neck",
                       "DURABLE BUILD: A ribbed collar and double-needle stitching hold up to frequent washing",
                       "MATCHES EVERYTHING: The {Color} color works with jeans, shorts and joggers",
                       "MULTIPACK VALUE: Stock up on wardrobe basics with a pack of essential tees at a great price",
                   },
               .aspects = {"fit", "fabric softness", "sizing", "shrinkage", "color"},
               .uses = {"for everyday wear", "to wear under a button-down shirt", "for the gym",
                        "for lounging at home"},
               .complements = {"Men's Stretch Jeans", "Men's Pullover Hoodie"}},

              // Dress shirt
              {.noun = "Men's Button-Down Dress Shirt",
               .short_noun = "dress shirt",
               .categories = {"Men", "Clothing", "Shirts"},
               .price_median = 35,
               .price_spread = 0.45,
               .attributes = {"Color", "Size", "Fit", "Pattern"},
               .features =
                   {
                       "SHARP LOOK: A {Fit} {Pattern} shirt with a crisp button-down collar for the office or special "
                       "occasions",
                       "WRINKLE RESISTANT: Easy-care fabric comes out of the dryer ready to wear with little or no "
                       "ironing",
                       "STRETCH COMFORT: A touch of stretch lets you move freely through long workdays",
                       "REFINED DETAILS: Adjustable cuffs, a chest pocket and a {Color} hue that pairs with any tie",
                       "BREATHABLE: Lightweight woven cotton keeps you cool under a suit jacket",
                   },
               .aspects = {"fit", "fabric quality", "sizing", "wrinkle resistance", "collar"},
               .uses = {"for the office", "for job interviews", "for weddings", "for business trips"},
               .complements = {"Men's Dress Belt", "Men's Analog Watch"}},

              // Dress
              {.noun = "Women's Midi Dress",
               .short_noun = "dress",
               .categories = {"Women", "Clothing", "Dresses"},
               .price_median = 39,
               .price_spread = 0.45,
               .attributes = {"Color", "Size", "Pattern", "Material"},
               .features =
                   {
                       "EFFORTLESS STYLE: A flowy {Pattern} midi dress in {Color} that goes from brunch to dinner",
                       "FLATTERING SHAPE: A wrap-style V-neck and tie waist define your shape while the skirt flows",
                       "LIGHTWEIGHT FABRIC: {Material} drapes beautifully and stays breathable in warm weather",
                       "PRACTICAL DETAILS: Hidden side pockets and a lined skirt make it easy to wear all day",
                       "OCCASION READY: Pair the {noun} with sandals for vacation or heels for a wedding",
                   },
               .aspects = {"fit", "fabric", "sizing", "length", "color"},
               .uses = {"for a summer wedding", "for vacation", "for date night", "for church on Sundays"},
               .complements = {"Women's Pendant Necklace", "Women's Crossbody Bag"}},

              // Leggings
              {.noun = "Women's High Waisted Leggings",
               .short_noun = "leggings",
               .categories = {"Women", "Clothing", "Leggings"},
               .price_median = 25,
               .price_spread = 0.45,
               .attributes = {"Color", "Size"},
               .features =
                   {
                       "HIGH WAISTED: A wide, high-rise waistband smooths and supports without rolling down",
                       "SQUAT PROOF: Thick, opaque fabric stays non see-through during squats and stretches",
                       "BUTTERY SOFT: Four-way stretch fabric moves with you and feels like a second skin",
                       "HANDY POCKETS: Two side pockets hold your phone and keys during workouts",
                       "GO-TO COLOR: The {Color} {noun} pair with sneakers for the gym or oversized sweaters for "
                       "errands",
                   },
               .aspects = {"fit", "fabric softness", "sizing", "opacity", "waistband"},
               .uses = {"for yoga classes", "for running", "for lounging at home", "for running errands"},
               .complements = {"Women's Running Shoes", "Women's Short Sleeve T-Shirt"}},

              // Hoodie
              {.noun = "Men's Pullover Hoodie",
               .short_noun = "hoodie",
               .categories = {"Men", "Clothing", "Fashion Hoodies & Sweatshirts"},
               .price_median = 35,
               .price_spread = 0.45,
               .attributes = {"Color", "Size", "Fit"},
               .features =
                   {
                       "COZY FLEECE: A soft brushed fleece lining traps warmth on cool mornings and chilly nights",
                       "RELAXED COMFORT: A {Fit} with ribbed cuffs and hem that keeps its shape",
                       "PRACTICAL DESIGN: A roomy front kangaroo pocket and an adjustable drawstring hood",
                       "VERSATILE COLOR: The {Color} {noun} layers over tees and under jackets",
                       "LASTING QUALITY: Pill-resistant fabric and reinforced seams hold up wash after wash",
                   },
               .aspects = {"warmth", "fit", "fabric softness", "sizing", "pilling"},
               .uses = {"for chilly evenings", "for lounging on weekends", "to wear to the gym",
                        "for fall camping trips"},
               .complements = {"Men's Stretch Jeans", "Men's Running Shoes"}},

              // Puffer jacket
              {.noun = "Women's Quilted Puffer Jacket",
               .short_noun = "puffer jacket",
               .categories = {"Women", "Clothing", "Coats, Jackets & Vests"},
               .price_median = 69,
               .price_spread = 0.5,
               .attributes = {"Color", "Size"},
               .features =
                   {
                       "WARM WITHOUT BULK: Lightweight synthetic insulation traps heat while staying easy to layer",
                       "WEATHER READY: A water-resistant shell sheds light rain and snow on the way to work",
                       "PACKABLE: The {noun} folds into its own pocket for travel and storage",
                       "THOUGHTFUL DETAILS: Zippered hand pockets, a stand collar and elastic cuffs seal out cold air",
                       "CLASSIC QUILTING: Horizontal quilting in {Color} gives a clean, flattering silhouette",
                   },
               .aspects = {"warmth", "fit", "sizing", "weight", "zipper"},
               .uses = {"for cold winter walks", "for travel", "for layering in fall",
                        "for commuting in cold weather"},
               .complements = {"Women's Crossbody Bag"}},

              // Jeans
              {.noun = "Men's Stretch Jeans",
               .short_noun = "jeans",
               .categories = {"Men", "Clothing", "Jeans"},
               .price_median = 45,
               .price_spread = 0.45,
               .attributes = {"Fit", "Size", "Color"},
               .features =
                   {
                       "COMFORT STRETCH: Cotton denim with a touch of elastane moves with you all day",
                       "MODERN CUT: Cut in a {Fit} that sits at the waist with room to move through the thigh",
                       "CLASSIC FIVE POCKET: Traditional five-pocket styling with a zip fly and a sturdy metal button",
                       "COLOR THAT LASTS: A {Color} wash that resists fading and looks sharp for years",
                       "BUILT TO LAST: Reinforced stitching at stress points stands up to daily wear",
                   },
               .aspects = {"fit", "stretch", "sizing", "length", "fabric quality"},
               .uses = {"for everyday wear", "for casual Fridays", "for date night", "for weekend outings"},
               .complements = {"Men's Dress Belt", "Men's Crew Neck T-Shirt"}},

              // Necklace
              {.noun = "Women's Pendant Necklace",
               .short_noun = "necklace",
               .categories = {"Women", "Jewelry", "Necklaces"},
               .price_median = 39,
               .price_spread = 0.6,
               .attributes = {"Metal", "Stone"},
               .features =
                   {
                       "DELICATE DESIGN: A dainty pendant set with a sparkling {Stone} on an adjustable chain",
                       "QUALITY METAL: Crafted in {Metal} that is nickel free and safe for sensitive skin",
                       "ADJUSTABLE LENGTH: The 16 inch chain extends to 18 inches to sit perfectly with any neckline",
                       "READY TO GIFT: Arrives in a velvet gift box, perfect for birthdays, anniversaries and holidays",
                       "EVERYDAY WEAR: A tarnish-resistant finish lets you wear the {noun} every day",
                   },
               .aspects = {"shine", "chain quality", "size", "clasp", "tarnish resistance"},
               .uses = {"for my wife's birthday", "for everyday wear", "for an anniversary gift",
                        "to give my mom for Mother's Day"},
               .complements = {"Women's Hoop Earrings", "Women's Stacking Ring"}},

              // Earrings
              {.noun = "Women's Hoop Earrings",
               .short_noun = "earrings",
               .categories = {"Women", "Jewelry", "Earrings"},
               .price_median = 29,
               .price_spread = 0.55,
               .attributes = {"Metal", "Stone"},
               .features =
                   {
                       "LIGHTWEIGHT HOOPS: Hollow tube hoops are comfortable enough to wear from morning to night",
                       "HYPOALLERGENIC: {Metal} posts are gentle on sensitive ears and will not turn skin green",
                       "SUBTLE SPARKLE: A row of tiny {Stone} accents catches the light from every angle",
                       "SECURE CLOSURE: Click-top hinges close firmly and open easily",
                       "GIFT READY: Packaged in a jewelry box with a polishing cloth included",
                   },
               .aspects = {"shine", "weight", "comfort", "clasp", "size"},
               .uses = {"for sensitive ears", "for everyday wear", "for my girlfriend's birthday",
                        "for a night out"},
               .complements = {"Women's Pendant Necklace"}},

              // Ring
              {.noun = "Women's Stacking Ring",
               .short_noun = "ring",
               .categories = {"Women", "Jewelry", "Rings"},
               .price_median = 25,
               .price_spread = 0.6,
               .attributes = {"Metal", "Stone"},
               .features =
                   {
                       "STACKABLE STYLE: A thin band designed to stack with other rings or shine on its own",
                       "GENTLE SPARKLE: Set with a small {Stone} that adds polish without looking flashy",
                       "COMFORT FIT: A rounded inner edge in {Metal} feels smooth on the finger",
                       "LASTING SHINE: A protective coating resists tarnish and everyday scratches",
                       "SIZE GUIDE: Available in whole and half sizes, so check the sizing chart before ordering",
                   },
               .aspects = {"shine", "sizing", "comfort", "tarnish resistance", "stone quality"},
               .uses = {"to give as a promise ring", "for everyday wear", "for a birthday present",
                        "to stack with my wedding band"},
               .complements = {"Women's Hoop Earrings", "Women's Pendant Necklace"}},

              // Belt
              {.noun = "Men's Dress Belt",
               .short_noun = "belt",
               .categories = {"Men", "Accessories", "Belts"},
               .price_median = 25,
               .price_spread = 0.45,
               .attributes = {"Color", "Size"},
               .features =
                   {
                       "GENUINE LEATHER: A full-grain leather strap that softens and develops a rich patina over time",
                       "POLISHED BUCKLE: A brushed metal buckle complements suits and business casual outfits",
                       "EASY SIZING: Pick a belt two inches larger than your pant waist for the best fit",
                       "VERSATILE COLOR: {Color} leather pairs with dress shoes, boots and loafers",
                       "GIFT BOXED: Arrives in a gift box, ready for Father's Day or birthdays",
                   },
               .aspects = {"leather quality", "buckle", "sizing", "durability", "color"},
               .uses = {"for work outfits", "to wear with suits", "to give my dad for Father's Day",
                        "to replace a worn-out belt"},
               .complements = {"Men's Analog Watch"}},

              // Watch
              {.noun = "Men's Analog Watch",
               .short_noun = "watch",
               .categories = {"Men", "Watches", "Wrist Watches"},
               .price_median = 89,
               .price_spread = 0.65,
               .attributes = {"Metal", "Color"},
               .features =
                   {
                       "CLASSIC DESIGN: A clean analog dial in {Color} with luminous hands and a date window",
                       "QUALITY BUILD: A {Metal} case with a scratch-resistant mineral crystal",
                       "ACCURATE: A Japanese quartz movement keeps reliable time for years",
                       "WATER RESISTANT: Rated to 50 meters for hand washing, rain and splashes",
                       "COMFORTABLE BAND: An adjustable band fits most wrists and is easy to resize at home",
                   },
               .aspects = {"appearance", "accuracy", "band comfort", "weight", "dial readability"},
               .uses = {"to give my husband on our anniversary", "for the office", "for formal events",
                        "to replace my old watch"},
               .complements = {"Men's Dress Belt", "Men's Button-Down Dress Shirt"}},

              // Crossbody bag
              {.noun = "Women's Crossbody Bag",
               .short_noun = "crossbody bag",
               .categories = {"Women", "Handbags & Wallets", "Crossbody Bags"},
               .price_median = 35,
               .price_spread = 0.5,
               .attributes = {"Color", "Pattern"},
               .features =
                   {
                       "HANDS-FREE: An adjustable crossbody strap keeps your hands free for shopping, travel and "
                       "concerts",
                       "ORGANIZED: Multiple zip compartments and card slots keep your phone, wallet and keys in order",
                       "COMPACT CAPACITY: Fits a large phone, a small wallet, keys and lipstick without bulk",
                       "STYLISH LOOK: A {Pattern} design in {Color} adds polish to casual and dressy outfits",
                       "DURABLE BUILD: Smooth metal zippers and sturdy stitching hold up to daily use",
                   },
               .aspects = {"size", "strap", "zipper", "material", "compartments"},
               .uses = {"for traveling abroad", "for concerts and festivals", "for everyday errands",
                        "for my sister's birthday"},
               .complements = {"Women's Hoop Earrings", "Women's Slip-On Sneakers"}},
          },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Health and Household: supplements, sports nutrition, oral care, wellness devices and household supplies.
// ---------------------------------------------------------------------------------------------------------
Category make_health() {
  return Category{
      .main_category = "Health & Personal Care",
      .paper_name = "Health and Household",
      .top_category = "Health & Household",
      .interest = "health and wellness products",
      .weight = 0.16,
      .attributes =
          {
              {"Scent",
               {"Unscented", "Lavender", "Eucalyptus Mint", "Fresh Linen", "Citrus", "Coconut Vanilla",
                "Ocean Breeze", "Tea Tree", "Cucumber Melon", "Sandalwood", "Rose", "Cedarwood"}},
              {"Count",
               {"30 Count", "60 Count", "90 Count", "120 Count", "150 Count", "180 Count", "240 Count", "365 Count"}},
              {"Form",
               {"Softgels", "Capsules", "Vegetarian Capsules", "Tablets", "Chewable Tablets", "Gummies",
                "Liquid Drops", "Powder"}},
              {"Strength",
               {"Regular Strength", "Extra Strength", "Maximum Strength", "High Potency", "Double Strength",
                "Advanced Formula", "Gentle Formula", "Clinical Strength"}},
              {"Flavor",
               {"Mixed Berry", "Orange", "Strawberry", "Lemon Lime", "Cherry", "Tropical Punch", "Watermelon",
                "Chocolate", "Vanilla", "Raspberry", "Peach Mango", "Blue Raspberry"}},
              {"Size",
               {"8 Fl Oz", "12 Fl Oz", "16 Fl Oz", "19.4 Fl Oz", "24 Fl Oz", "32 Fl Oz", "48 Fl Oz", "50 Fl Oz"}},
              {"Color",
               {"White", "Black", "Gray", "Blush Pink", "Sky Blue", "Mint Green", "Navy", "Silver", "Lavender",
                "Matte Black"}},
              {"Diet Type",
               {"Vegan", "Vegetarian", "Gluten-Free", "Non-GMO", "Sugar-Free", "Keto-Friendly", "Dairy-Free",
                "Soy-Free", "Kosher", "Paleo-Friendly"}},
              {"Settings",
               {"3 Settings", "4 Settings", "5 Settings", "6 Settings", "9 Settings", "10 Settings", "12 Settings",
                "20 Settings"}},
          },
      .types =
          {
              // Vitamin D
              {.noun = "Vitamin D3 Supplement",
               .short_noun = "vitamin d",
               .categories = {"Vitamins, Minerals & Supplements", "Vitamins", "Vitamin D"},
               .price_median = 14,
               .price_spread = 0.4,
               .attributes = {"Form", "Count", "Strength", "Diet Type"},
               .features =
                   {
                       "IMMUNE AND BONE SUPPORT: Vitamin D3 helps support healthy bones, teeth, muscles and immune "
                       "function",
                       "EASY TO TAKE: Small {Form} that are easy to swallow, just one per day with a meal",
                       "RIGHT POTENCY: A {Strength} daily dose for people who get little sunshine during the winter",
                       "LONG LASTING SUPPLY: One {Count} bottle covers months of daily servings",
                       "CLEAN FORMULA: {Diet Type}, with no artificial colors, flavors or preservatives",
                       "QUALITY TESTED: Made in a certified facility and tested by an independent lab for purity",
                   },
               .aspects = {"effectiveness", "ease of swallowing", "taste", "ingredients", "aftertaste"},
               .uses = {"to support my immune system", "for the winter months", "for bone health",
                        "to fix low vitamin D levels"},
               .complements = {"Magnesium Glycinate Supplement", "Omega-3 Fish Oil"}},

              // Multivitamin
              {.noun = "Multivitamin Gummies",
               .short_noun = "multivitamin",
               .categories = {"Vitamins, Minerals & Supplements", "Multivitamins"},
               .price_median = 17,
               .price_spread = 0.4,
               .attributes = {"Flavor", "Count", "Diet Type"},
               .features =
                   {
                       "DAILY NUTRITION: Thirteen essential vitamins and minerals help fill common nutrition gaps",
                       "TASTY GUMMIES: Natural {Flavor} flavor makes taking your vitamins something to look forward to",
                       "NO PILLS: Chewable {noun} are a great option for anyone who dislikes swallowing tablets",
                       "MADE CLEAN: {Diet Type}, with colors that come from fruit and vegetable juices",
                       "FAMILY SUPPLY: Each {Count} bottle supports a steady daily routine for the whole household",
                   },
               .aspects = {"taste", "effectiveness", "texture", "sugar content", "ingredients"},
               .uses = {"for my kids", "to fill gaps in my diet", "for someone who hates swallowing pills",
                        "for daily energy"},
               .complements = {"Omega-3 Fish Oil", "Daily Probiotic Supplement"}},

              // Fish oil
              {.noun = "Omega-3 Fish Oil",
               .short_noun = "fish oil",
               .categories = {"Vitamins, Minerals & Supplements", "Supplements", "Fish Oil"},
               .price_median = 22,
               .price_spread = 0.45,
               .attributes = {"Form", "Count", "Strength"},
               .features =
                   {
                       "HEART HEALTH: EPA and DHA omega-3s support heart, brain and joint health",
                       "HIGH CONCENTRATION: A {Strength} formula delivers more omega-3s in every serving",
                       "NO FISHY BURPS: Enteric-coated {Form} with natural lemon oil reduce any aftertaste",
                       "PURITY TESTED: Wild-caught fish oil is molecularly distilled and tested for heavy metals",
                       "VALUE SIZE: A {Count} bottle provides months of daily support",
                   },
               .aspects = {"aftertaste", "effectiveness", "pill size", "freshness", "purity"},
               .uses = {"for heart health", "to support my joints", "for brain health",
                        "to add omega-3s to my diet"},
               .complements = {"Vitamin D3 Supplement", "Multivitamin Gummies"}},

              // Magnesium
              {.noun = "Magnesium Glycinate Supplement",
               .short_noun = "magnesium",
               .categories = {"Vitamins, Minerals & Supplements", "Minerals", "Magnesium"},
               .price_median = 19,
               .price_spread = 0.4,
               .attributes = {"Form", "Count", "Strength"},
               .features =
                   {
                       "CALM AND RELAX: Magnesium supports muscle relaxation, restful sleep and a calm mood",
                       "GENTLE ON THE STOMACH: The highly absorbable glycinate form is less likely to cause digestive "
                       "upset",
                       "EASY DOSING: {Strength} {Form} that fit easily into your evening routine",
                       "MUSCLE SUPPORT: Helps ease occasional cramps after workouts and long days on your feet",
                       "STOCK UP: A {Count} bottle keeps you supplied for months",
                   },
               .aspects = {"effectiveness", "sleep quality", "pill size", "stomach comfort", "taste"},
               .uses = {"to help me sleep better", "for muscle cramps", "to relax in the evening",
                        "for stress relief"},
               .complements = {"Melatonin Sleep Gummies", "Vitamin D3 Supplement"}},

              // Probiotic
              {.noun = "Daily Probiotic Supplement",
               .short_noun = "probiotic",
               .categories = {"Vitamins, Minerals & Supplements", "Supplements", "Probiotics"},
               .price_median = 27,
               .price_spread = 0.45,
               .attributes = {"Form", "Count", "Diet Type"},
               .features =
                   {
                       "DIGESTIVE BALANCE: 50 billion CFUs from ten probiotic strains support healthy digestion and "
                       "regularity",
                       "SHELF STABLE: No refrigeration needed, so you can keep the {noun} in a cabinet or travel bag",
                       "DELAYED RELEASE: Acid-resistant {Form} help probiotics survive stomach acid and reach the gut",
                       "CLEAN INGREDIENTS: {Diet Type}, with no fillers, binders or artificial additives",
                       "DAILY HABIT: A {Count} bottle with one simple serving per day",
                   },
               .aspects = {"effectiveness", "digestion", "bloating", "pill size", "ingredients"},
               .uses = {"for better digestion", "to reduce bloating", "to rebuild gut health after antibiotics",
                        "for gut health"},
               .complements = {"Multivitamin Gummies"}},

              // Melatonin
              {.noun = "Melatonin Sleep Gummies",
               .short_noun = "sleep gummies",
               .categories = {"Health Care", "Sleep & Snoring", "Sleep Aids"},
               .price_median = 12,
               .price_spread = 0.4,
               .attributes = {"Flavor", "Count", "Strength"},
               .features =
                   {
                       "FALL ASLEEP NATURALLY: Melatonin helps you fall asleep faster and wake up without grogginess",
                       "CALMING BLEND: Added chamomile and lemon balm help you unwind before bed",
                       "TASTY BEDTIME: Natural {Flavor} flavored gummies make winding down something to enjoy",
                       "FLEXIBLE DOSE: A {Strength} formula, so start with one gummy and adjust as needed",
                       "TRAVEL FRIENDLY: Great for jet lag and adjusting to new time zones",
                       "STOCKED UP: A {Count} bottle lasts through many restful nights",
                   },
               .aspects = {"effectiveness", "taste", "grogginess", "texture", "sleep quality"},
               .uses = {"to fall asleep faster", "for jet lag", "to fix my sleep schedule", "for restless nights"},
               .complements = {"Magnesium Glycinate Supplement", "Essential Oil Diffuser"}},

              // Protein powder
              {.noun = "Protein Powder",
               .short_noun = "protein powder",
               .categories = {"Sports Nutrition", "Protein", "Protein Powders"},
               .price_median = 39,
               .price_spread = 0.4,
               .attributes = {"Flavor", "Diet Type"},
               .features =
                   {
                       "25 GRAMS OF PROTEIN: Each scoop delivers 25 grams of protein to support muscle recovery",
                       "GREAT TASTE: Rich {Flavor} flavor mixes smoothly with water or milk, with no clumps",
                       "FEWER EXTRAS: Low in sugar and fat, with a {Diet Type} formula you can feel good about",
                       "POST-WORKOUT RECOVERY: Amino acids help muscles rebuild after hard training sessions",
                       "VERSATILE: Blend into smoothies, stir into oatmeal or bake into protein pancakes",
                   },
               .aspects = {"taste", "mixability", "texture", "protein content", "sweetness"},
               .uses = {"for post-workout recovery", "to hit my protein goals", "to make breakfast smoothies",
                        "for building muscle"},
               .complements = {"Electrolyte Drink Mix", "Deep Tissue Massage Gun"}},

              // Electrolytes
              {.noun = "Electrolyte Drink Mix",
               .short_noun = "electrolyte mix",
               .categories = {"Sports Nutrition", "Sports Drinks", "Electrolyte Replacement"},
               .price_median = 24,
               .price_spread = 0.4,
               .attributes = {"Flavor", "Count", "Diet Type"},
               .features =
                   {
                       "RAPID HYDRATION: Sodium, potassium and magnesium help you rehydrate faster than water alone",
                       "REFRESHING FLAVOR: A light {Flavor} flavor that is not overly sweet",
                       "ON THE GO: A {Count} box of single-serve stick packs fits in a gym bag or purse",
                       "LOW SUGAR: {Diet Type}, with just a few grams of sugar and no artificial colors",
                       "FOR ACTIVE DAYS: Ideal for workouts, hot weather, travel and long hikes",
                   },
               .aspects = {"taste", "sweetness", "effectiveness", "mixability", "saltiness"},
               .uses = {"for hot summer hikes", "to stay hydrated during workouts", "for recovering after a long run",
                        "to drink more water"},
               .complements = {"Protein Powder"}},

              // Toothbrush
              {.noun = "Electric Toothbrush",
               .short_noun = "electric toothbrush",
               .categories = {"Oral Care", "Toothbrushes", "Electric Toothbrushes"},
               .price_median = 45,
               .price_spread = 0.5,
               .attributes = {"Color", "Settings"},
               .features =
                   {
                       "DEEPER CLEAN: Sonic vibrations remove more plaque than a manual toothbrush",
                       "CUSTOM BRUSHING: {Settings} including clean, whitening, gum care and sensitive modes",
                       "SMART TIMER: A two-minute timer with 30-second pacing helps you brush evenly",
                       "LONG BATTERY: One charge lasts up to four weeks, which is great for travel",
                       "SLEEK DESIGN: A {Color} handle that comes with a travel case and two replacement heads",
                   },
               .aspects = {"cleaning power", "battery life", "vibration", "brush heads", "noise"},
               .uses = {"for healthier gums", "to replace my manual toothbrush", "for travel",
                        "for sensitive teeth"},
               .complements = {"Cordless Water Flosser"}},

              // Water flosser
              {.noun = "Cordless Water Flosser",
               .short_noun = "water flosser",
               .categories = {"Oral Care", "Dental Floss & Picks", "Water Flossers"},
               .price_median = 39,
               .price_spread = 0.45,
               .attributes = {"Color", "Settings"},
               .features =
                   {
                       "GENTLE AND EFFECTIVE: A pulsing water stream removes food and plaque between teeth and along "
                       "the gumline",
                       "ADJUSTABLE PRESSURE: {Settings} let you start gentle and build up as your gums get used to it",
                       "GREAT FOR BRACES: Includes specialty tips for braces, implants and periodontal pockets",
                       "CORDLESS AND RECHARGEABLE: The {Color} {noun} charges by USB and fits on any bathroom counter",
                       "IPX7 WATERPROOF: Safe to use in the shower for mess-free flossing",
                   },
               .aspects = {"water pressure", "tank size", "battery life", "mess", "noise"},
               .uses = {"for cleaning around braces", "for bleeding gums", "to replace string floss",
                        "for travel"},
               .complements = {"Electric Toothbrush"}},

              // Massage gun
              {.noun = "Deep Tissue Massage Gun",
               .short_noun = "massage gun",
               .categories = {"Wellness & Relaxation", "Massage Tools & Equipment", "Electric Massagers"},
               .price_median = 69,
               .price_spread = 0.5,
               .attributes = {"Color", "Settings"},
               .features =
                   {
                       "RELIEVE SORE MUSCLES: Percussive therapy reaches deep muscle tissue to ease tension and "
                       "post-workout soreness",
                       "ADJUSTABLE INTENSITY: {Settings} ranging from a gentle warm-up to deep tissue work",
                       "QUIET MOTOR: A brushless motor runs quietly enough to use while watching TV",
                       "INTERCHANGEABLE HEADS: Six attachment heads target the back, neck, legs and feet",
                       "PORTABLE: The {Color} {noun} comes with a carrying case and lasts weeks between charges",
                   },
               .aspects = {"power", "noise", "battery life", "weight", "attachments"},
               .uses = {"for muscle recovery after workouts", "to relieve back pain",
                        "for tight shoulders after desk work", "to give a friend who runs"},
               .complements = {"Electric Heating Pad", "Protein Powder"}},

              // Heating pad
              {.noun = "Electric Heating Pad",
               .short_noun = "heating pad",
               .categories = {"Health Care", "Pain Relievers", "Hot & Cold Therapies"},
               .price_median = 29,
               .price_spread = 0.4,
               .attributes = {"Color", "Settings"},
               .features =
                   {
                       "SOOTHING WARMTH: A fast-heating pad eases back pain, cramps and stiff muscles",
                       "CUSTOM HEAT: {Settings} of heat let you find the right temperature for your comfort",
                       "AUTO SHUTOFF: Turns off automatically after two hours for safe use if you fall asleep",
                       "SOFT COVER: A plush, machine-washable {Color} cover feels cozy against the skin",
                       "EXTRA LARGE: A generous 12 by 24 inch size covers the back, shoulders or abdomen",
                   },
               .aspects = {"warmth", "heating speed", "size", "softness", "cord length"},
               .uses = {"for back pain relief", "for menstrual cramps", "to relax sore muscles",
                        "to stay warm on cold nights"},
               .complements = {"Deep Tissue Massage Gun"}},

              // Diffuser
              {.noun = "Essential Oil Diffuser",
               .short_noun = "diffuser",
               .categories = {"Wellness & Relaxation", "Aromatherapy", "Diffusers"},
               .price_median = 29,
               .price_spread = 0.45,
               .attributes = {"Color", "Settings"},
               .features =
                   {
                       "RELAXING AROMA: Ultrasonic diffusion fills the room with a fine mist of your favorite "
                       "essential oils",
                       "CUSTOM MIST: {Settings} for mist intensity, timers and ambient light color",
                       "WHISPER QUIET: Runs silently, making it perfect for bedrooms, nurseries and yoga spaces",
                       "SAFE OPERATION: Shuts off automatically when the water runs out",
                       "DECOR FRIENDLY: The {Color} {noun} looks at home on a nightstand, desk or shelf",
                   },
               .aspects = {"mist output", "noise", "light", "tank size", "scent strength"},
               .uses = {"for a relaxing bedroom", "to make my home smell nice", "for yoga and meditation",
                        "for my office desk"},
               .complements = {"Melatonin Sleep Gummies"}},

              // Laundry pods
              {.noun = "Laundry Detergent Pods",
               .short_noun = "detergent pods",
               .categories = {"Household Supplies", "Laundry", "Laundry Detergent"},
               .price_median = 19,
               .price_spread = 0.4,
               .attributes = {"Scent", "Count"},
               .features =
                   {
                       "POWERFUL CLEAN: Concentrated pods lift tough stains and odors in one simple step",
                       "FRESH FINISH: {Scent} pods leave clothes clean, soft and fresh out of the dryer",
                       "WORKS IN ALL MACHINES: Dissolves fully in hot and cold water, in standard and HE washers",
                       "BULK SUPPLY: A {Count} tub means fewer trips to the store",
                       "CHILD-RESISTANT: The container has a child-resistant lid to keep pods safely stored",
                   },
               .aspects = {"cleaning power", "scent", "dissolving", "stain removal", "residue"},
               .uses = {"to wash my family's laundry", "for sensitive skin", "to remove tough stains",
                        "for a small apartment washer"},
               .complements = {"Disinfecting Wipes", "Liquid Dish Soap"}},

              // Dish soap
              {.noun = "Liquid Dish Soap",
               .short_noun = "dish soap",
               .categories = {"Household Supplies", "Dishwashing", "Dish Soap"},
               .price_median = 9,
               .price_spread = 0.4,
               .attributes = {"Scent", "Size"},
               .features =
                   {
                       "GREASE FIGHTING: Cuts through baked-on grease and food residue with just a small drop",
                       "GENTLE ON HANDS: A plant-based formula with aloe that will not dry out your skin",
                       "PLEASANT SCENT: A {Scent} formula that leaves dishes sparkling clean",
                       "LASTS LONGER: A {Size} bottle of concentrated soap goes a long way",
                       "SAFE FOR THE HOME: Biodegradable ingredients in a recyclable bottle",
                   },
               .aspects = {"grease cutting", "scent", "suds", "gentleness on skin", "bottle"},
               .uses = {"for washing dishes by hand", "to cut grease on pots and pans", "for sensitive hands",
                        "to keep my kitchen sink stocked"},
               .complements = {"Foaming Hand Soap Refill", "Disinfecting Wipes"}},

              // Wipes
              {.noun = "Disinfecting Wipes",
               .short_noun = "disinfecting wipes",
               .categories = {"Household Supplies", "Household Cleaning", "Disinfecting Wipes"},
               .price_median = 14,
               .price_spread = 0.4,
               .attributes = {"Scent", "Count"},
               .features =
                   {
                       "KILLS 99.9% OF GERMS: Sanitizes hard surfaces like counters, doorknobs and light switches",
                       "THICK AND STRONG: Durable textured wipes scrub away messes without tearing",
                       "NO BLEACH: A {Scent} formula with no bleach that is safe on most sealed surfaces",
                       "CONVENIENT CANISTER: A {Count} canister pops up one wipe at a time",
                       "CLEAN ANYWHERE: Great for the kitchen, bathroom, car, office and classroom",
                   },
               .aspects = {"scent", "wipe thickness", "moisture", "cleaning power", "dispensing"},
               .uses = {"to clean my kitchen counters", "for the classroom", "to wipe down my car",
                        "for quick bathroom cleanups"},
               .complements = {"Foaming Hand Soap Refill", "Liquid Dish Soap"}},

              // Hand soap
              {.noun = "Foaming Hand Soap Refill",
               .short_noun = "hand soap",
               .categories = {"Household Supplies", "Household Cleaning", "Hand Soap"},
               .price_median = 12,
               .price_spread = 0.4,
               .attributes = {"Scent", "Size"},
               .features =
                   {
                       "RICH FOAM: Refill your foaming dispensers for a luxurious lather with every pump",
                       "MOISTURIZING: Enriched with aloe and vitamin E to keep hands soft after frequent washing",
                       "LOVELY SCENT: A {Scent} formula that makes hand washing a little more pleasant",
                       "REFILL AND SAVE: A {Size} refill bottle fills your dispenser many times and cuts plastic waste",
                       "CLEAN FORMULA: Free of parabens and phthalates and never tested on animals",
                   },
               .aspects = {"scent", "lather", "moisturizing", "skin feel", "refill size"},
               .uses = {"to refill my bathroom dispensers", "for a busy family", "for the kitchen sink",
                        "to cut down on plastic bottles"},
               .complements = {"Liquid Dish Soap"}},
          },
  };
}

}  // namespace

const std::vector<Category>& categories() {
  static const std::vector<Category> kCategories = {
      make_electronics(), make_home(), make_grocery(), make_fashion(), make_health(),
  };
  return kCategories;
}

const std::vector<std::string_view>& styles() {
  static const std::vector<std::string_view> kStyles = {
      "Minimalist", "Rustic", "Premium",    "Eco-Friendly", "Vintage",  "Sporty",     "Compact",  "Professional",
      "Modern",     "Classic", "Luxury",    "Portable",     "Heavy Duty", "Organic",  "Farmhouse", "Bohemian",
      "Lightweight", "Retro",
  };
  return kStyles;
}

const std::vector<std::string_view>& brand_syllables() {
  static const std::vector<std::string_view> kSyllables = {
      "vol", "tri", "kel", "mo",  "ra",  "zen", "lux", "bri", "cor", "dan", "fen", "gal", "hal", "ix",
      "jor", "ka",  "lin", "mar", "nel", "or",  "pel", "quin", "ren", "sol", "tam", "ul", "val", "wen",
      "yar", "ab",  "bel", "cal", "dor", "em",  "fal", "gor", "hel", "is",  "jan", "kor", "lor", "mir",
      "nov", "ost", "pra", "qua", "rin", "sev", "tor", "um",  "ver", "wil", "yel", "zan", "aer", "bro",
      "cre", "dra", "gla", "ple", "sto", "tre", "eno", "ola", "ume", "orn", "ell", "iva", "tal", "vex",
      "ko",  "na",  "vi",  "sen", "dal", "mek",
  };
  return kSyllables;
}

const std::vector<std::string_view>& general_aspects() {
  static const std::vector<std::string_view> kAspects = {
      "quality",     "price",    "value for money", "durability", "packaging",
      "customer service", "appearance", "ease of use", "shipping", "overall design",
  };
  return kAspects;
}

}  // namespace pwab::data::synth
