"""The look of the report's figures in one place: colours, sizes, fonts, marks and lines.

A figure module (``mr2.results.figures``) says what it draws; how it looks is named here, so a
change of look is one edit and no figure carries a number of its own. Sizes are inches, fonts and
marks points, line widths points.
"""

from __future__ import annotations

import seaborn as sns

# ----------------------------------------------------------------------------- colours
GROUP_COLOURS = {"easy": "tab:green", "medium": "tab:orange", "hard": "tab:red"}
UNKNOWN_GROUP_COLOUR = "grey"  # a class without a group on a class axis
#: one colour per method in every figure (none is a group's green, orange or red); a method not
#: listed gets a fixed colour of FALLBACK_COLOURS chosen by its name, a non-default variant one
#: chosen by its label (``mr2.results.plotting.method_colour``)
METHOD_COLOURS = {
    "erm": "#4d4d4d", "erm_tuned": "#969696", "ce_temperature": "#e7969c", "mr2": "tab:blue", "mr2_uniform": "tab:purple", "mr2_no_rep": "tab:cyan",
    "mr2_release": "tab:brown", "focal": "tab:pink", "ldam": "tab:olive", "logit_adjust": "#393b79",
    "eql": "#8c6d31", "supcon": "#7b4173", "center": "#5254a3", "dro": "#bd9e39", "fairdro": "#843c39",
    "jtt": "#637939", "lff": "#ad494a",
}
FALLBACK_COLOURS = sns.color_palette("tab20b", 20).as_hex()
ALL_CLASSES_COLOUR = "black"  # the accuracy of all classes beside the hard ones' (sweeps)
CLAIMED_QUADRANT = "tab:green"  # the trade-off plane's quadrant MR² claims

# ----------------------------------------------------------------------------- sizes
PANEL_SIZE = (4.5, 3.6)
WIDE_PANEL = 5.0  # a panel whose y axis names rows (methods, metrics, classes)
MARGIN_PANEL = 1.25 * PANEL_SIZE[0]  # a margins panel: room for the classes' names at the lines' ends
CLASS_WIDTH = 0.18  # per class on a class-name axis
CLASS_ROW = 0.28  # per class row of the per-class dot plot
METRIC_ROW = 0.16  # per method and metric row of the claim's forest plot
REGIME_WIDTH = 1.3  # per training regime on the regimes' x axis
FIGURE_DPI = 150  # every PNG: the report's page shows them all at one scale (``mr2.results.html``)

# ----------------------------------------------------------------------------- fonts
TITLE_FONT = 9  # a panel title of two lines
CLASS_TITLE_PAD = 14  # room between a title and the group names above a class axis
SMALL_TITLE_FONT = 8  # a panel title holding a statistic
TRADEOFF_TITLE_FONT = 10
LABEL_FONT = 8  # tick labels that name classes, groups or regimes; a legend beside many panels
MANY_LABELS_FONT = 6  # tick labels when more than 30 classes are named
NAME_FONT = 7  # a name written beside a point or a line end, a note on a line

# ----------------------------------------------------------------------------- marks
POINT = 5  # a mean drawn as a point (markersize)
SMALL_POINT = 4  # a point with an error bar in a dense panel
LARGE_POINT = 6  # the trade-off plane's one point per method
SCATTER_POINT = 18  # a class in a scatter of classes (area, points²)
DOT_ALPHA = 0.85  # the per-class dot plot's dots (overlaps stay visible)
SCATTER_ALPHA = 0.8
INTERVAL = {"capsize": 2, "elinewidth": 1}  # an error bar: a t-interval or an sd
WIDE_INTERVAL = {"capsize": 2, "elinewidth": 1.2}  # the claim's intervals, the figure's subject
TRADEOFF_INTERVAL = {"capsize": 3, "elinewidth": 1}

# ----------------------------------------------------------------------------- lines
ZERO_LINE = {"color": "black", "linewidth": 0.8}  # no change
QUIET_ZERO_LINE = {"color": "grey", "linewidth": 0.8, "zorder": 0}  # the trade-off plane's axes
RULE = {"color": "0.85", "linewidth": 0.6}  # between groups of rows or columns
GRID = {"color": "0.92", "linewidth": 0.6}
REFERENCE_LINE = {"linestyle": "--", "linewidth": 0.9}  # the reference method's level
DEFAULT_LINE = {"color": "grey", "linestyle": ":", "linewidth": 1}  # a swept option's default value
C_BAR_LINE = {"color": "0.4", "linestyle": ":", "linewidth": 1}  # the mean margin c̄
C_BAR_NOTE = {"fontsize": NAME_FONT, "color": "0.3"}
CLASS_LINE = {"linewidth": 0.6, "alpha": 0.35}  # one class over training
GROUP_LINE = {"linewidth": 2.5}  # a group's mean over training
SERIES_LINE = 0.8  # the line joining one method's points across regimes
SHADE_ALPHA = 0.12  # a class group's band on a class axis
QUADRANT_ALPHA = 0.07
NAME_JOIN = {"arrowstyle": "-", "color": "0.6", "lw": 0.5}  # a moved name to its point
END_JOIN = {"arrowstyle": "-", "color": "0.7", "lw": 0.4, "shrinkA": 0, "shrinkB": 0}  # a name to its line end
