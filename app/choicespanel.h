#pragma once
// The Choices panel: model (and import), weight format, KV dtype, engine, what the rows are,
// context / users / micro-batch, the host (its RAM and memory bandwidth), and the cards. Its model is the Selection: the panel shows one
// and edits it, and says which choice changed. Messages about a choice (a size that is not a
// size, an import that failed) show under the choice itself and clear once fixed.

#include "catalog.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace headroom::app {

class SliderEntry;

class ChoicesPanel : public QWidget
{
    Q_OBJECT
public:
    /// Which choice changed.
    enum class Change { Model, Format, Other, Cards };

    /// @p catalog outlives the panel; sized cards typed into the panel are added to it.
    explicit ChoicesPanel(Catalog& catalog, QWidget* parent = nullptr);

    const Selection& selection() const { return m_selection; }
    /// Shows @p selection (no change signal).
    void setSelection(const Selection& selection);
    /// Rebuilds the model list (after an import) and the card list (after a GPU was detected).
    void refillModels();
    void refillCards();
    /// The context slider's range follows the model's trained context.
    void updateContextRange();

    /// The line under the model: progress or success (@p error false) or a failure (in red,
    /// with @p details on hover). An empty @p text hides it.
    void setModelMessage(const QString& text, bool error, const QString& details = {});
    QLabel* modelMessage() const { return m_modelMessage; }
    QLabel* cardMessage() const { return m_cardMessage; }

    QComboBox* modelCombo() const { return m_modelCombo; }
    QComboBox* formatCombo() const { return m_formatCombo; }
    QComboBox* kvCombo() const { return m_kvCombo; }
    QComboBox* engineCombo() const { return m_engineCombo; }
    QComboBox* modeCombo() const { return m_modeCombo; }
    QListWidget* cardList() const { return m_cardList; }
    QLineEdit* sizeEdit() const { return m_sizeEdit; }
    SliderEntry* contextEntry() const { return m_context; }
    SliderEntry* usersEntry() const { return m_users; }
    SliderEntry* ubatchEntry() const { return m_ubatch; }
    /// The host's RAM free for the engine (the CLI's --host-ram; empty: not checked) and its
    /// memory bandwidth (--host-bandwidth; empty: core's assumed DDR5-5600).
    QLineEdit* hostRamEdit() const { return m_hostRam; }
    QLineEdit* hostBandwidthEdit() const { return m_hostBandwidth; }
    QLabel* hostMessage() const { return m_hostMessage; }

Q_SIGNALS:
    void changed(headroom::app::ChoicesPanel::Change change);
    void importFileRequested();
    void importFolderRequested();

private:
    void build();
    void connectControls();
    void sync();
    void readControls();
    void addSizedCard();
    void readHost();

    Catalog& m_catalog;
    Selection m_selection;
    bool m_syncing = false;

    QComboBox* m_modelCombo = nullptr;
    QPushButton* m_importFile = nullptr;
    QPushButton* m_importFolder = nullptr;
    QLabel* m_modelMessage = nullptr;
    QComboBox* m_formatCombo = nullptr;
    QComboBox* m_kvCombo = nullptr;
    QComboBox* m_engineCombo = nullptr;
    QComboBox* m_modeCombo = nullptr;
    SliderEntry* m_context = nullptr;
    SliderEntry* m_users = nullptr;
    SliderEntry* m_ubatch = nullptr;
    QLineEdit* m_hostRam = nullptr;
    QLineEdit* m_hostBandwidth = nullptr;
    QLabel* m_hostMessage = nullptr;
    QListWidget* m_cardList = nullptr;
    QLineEdit* m_sizeEdit = nullptr;
    QLabel* m_cardMessage = nullptr;
};

/// "RTX 4090 (23.64 GiB)": the card's name without the vendor, and its driver total.
QString cardLabel(const Card& card);
/// The model's own name, else its id.
QString modelLabel(const ModelProfile& model);
/// The hover text of a model: an imported model's path (its id), a built-in one's profile id
/// (the profile's provenance notes are for its maintainers).
QString modelToolTip(const ModelProfile& model);
/// Red text in the current palette, for messages that need an action.
QString errorStyleSheet();

} // namespace headroom::app
