// Light, dark or the system's colours. By default the application follows
// the system (the platform theme's palette); every custom-painted view reads
// its colours from the palette and repaints on a palette change, so a theme
// switch while running is followed too. Light and Dark force a Fusion
// palette, for systems whose theme Qt cannot read (and for screenshots).
#pragma once

#include <QString>

namespace lazyscope::gui {

enum class ColorScheme { System, Light, Dark };

// "system", "light", "dark" (case-insensitive); false for anything else.
bool parseColorScheme(const QString& text, ColorScheme* scheme);
QString colorSchemeName(ColorScheme scheme);

// Applies `scheme` to the running QApplication.
void applyColorScheme(ColorScheme scheme);
ColorScheme currentColorScheme();

// The scheme saved in the settings (View ▸ Color Scheme), System if none.
ColorScheme savedColorScheme();
void saveColorScheme(ColorScheme scheme);

}  // namespace lazyscope::gui
