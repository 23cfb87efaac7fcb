// Stand-in for the parts of SwiftUI our views use, from developer.apple.com/documentation/swiftui.
// Minimal but shaped like the real API where it matters to type-checking: `View` is a
// main-actor protocol with an associated `Body` built by the `@resultBuilder ViewBuilder`
// (blocks, `if`, `if let`, `switch`, local declarations), each modifier returns `some View`
// and takes what the documented signature takes (ShapeStyle / Color / Font members used as
// implicit members, `@Sendable` async actions that inherit the actor context as the SDK's
// declare them with `@_inheritActorContext`). Generic parameters the views never spell out
// (Section's header/footer, Label's icon) are collapsed. Bodies trap.
@_exported import Observation
@_exported import Foundation   // as the framework's umbrella header imports Foundation
import UIKit

// MARK: View, result builders

/// developer.apple.com/documentation/swiftui/view
@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor var body: Body { get }
}

extension Never: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
}

/// A view the stand-in builds for every container and modifier.
public struct _StubView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init() {}
}

public struct EmptyView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init() {}
}

public struct TupleView<T>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init(_ value: T) {}
}

public struct _ConditionalContent<TrueContent: View, FalseContent: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init() {}
}

/// developer.apple.com/documentation/swiftui/viewbuilder
@resultBuilder public struct ViewBuilder {
    public static func buildExpression<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock() -> EmptyView { EmptyView() }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock<each Content: View>(_ content: repeat each Content) -> TupleView<(repeat each Content)> {
        TupleView((repeat each content))
    }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { content }
    public static func buildEither<T: View, F: View>(first: T) -> _ConditionalContent<T, F> { _ConditionalContent() }
    public static func buildEither<T: View, F: View>(second: F) -> _ConditionalContent<T, F> { _ConditionalContent() }
    public static func buildLimitedAvailability<Content: View>(_ content: Content) -> AnyView { AnyView(content) }
}

extension Optional: View where Wrapped: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
}

public struct AnyView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init<V: View>(_ view: V) {}
}

// MARK: App, Scene

/// developer.apple.com/documentation/swiftui/app
@MainActor @preconcurrency public protocol App {
    associatedtype Body: Scene
    @SceneBuilder @MainActor var body: Body { get }
    @MainActor init()
}
extension App {
    @MainActor public static func main() { fatalError("stand-in") }
}

/// developer.apple.com/documentation/swiftui/scene
@MainActor @preconcurrency public protocol Scene {
    associatedtype Body: Scene
    @SceneBuilder @MainActor var body: Body { get }
}
extension Never: Scene {}

public struct _StubScene: Scene {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    nonisolated init() {}
}

/// developer.apple.com/documentation/swiftui/scenebuilder
@resultBuilder public struct SceneBuilder {
    public static func buildBlock<Content: Scene>(_ content: Content) -> Content { content }
}

/// developer.apple.com/documentation/swiftui/windowgroup
public struct WindowGroup<Content: View>: Scene {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/scenephase
public enum ScenePhase: Comparable, Hashable, Sendable {
    case background, inactive, active
}

extension Scene {
    /// `func onChange<V>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some Scene where V : Equatable`
    public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (_ oldValue: V, _ newValue: V) -> Void) -> some Scene {
        _StubScene()
    }
}

// MARK: Data flow

/// developer.apple.com/documentation/swiftui/dynamicproperty
public protocol DynamicProperty {}

/// developer.apple.com/documentation/swiftui/state
@propertyWrapper public struct State<Value>: DynamicProperty {
    public init(wrappedValue value: Value) {}
    public init(initialValue value: Value) {}
    public var wrappedValue: Value { get { fatalError("stand-in") } nonmutating set {} }
    public var projectedValue: Binding<Value> { fatalError("stand-in") }
}
extension State where Value: ExpressibleByNilLiteral {
    public init() {}
}

/// developer.apple.com/documentation/swiftui/binding
@propertyWrapper @dynamicMemberLookup public struct Binding<Value>: DynamicProperty {
    /// developer.apple.com/documentation/swiftui/binding/init(get:set:)-7ufcp —
    /// `@preconcurrency init(get: @escaping @isolated(any) @Sendable () -> Value,
    /// set: @escaping @isolated(any) @Sendable (Value) -> Void)`
    @preconcurrency public init(get: @escaping @isolated(any) @Sendable () -> Value,
                                set: @escaping @isolated(any) @Sendable (Value) -> Void) {}
    public init(projectedValue: Binding<Value>) {}
    /// `static func constant(_ value: Value) -> Binding<Value>`
    public static func constant(_ value: Value) -> Binding<Value> { fatalError("stand-in") }
    public var wrappedValue: Value { get { fatalError("stand-in") } nonmutating set {} }
    public var projectedValue: Binding<Value> { self }
    public subscript<Subject>(dynamicMember keyPath: WritableKeyPath<Value, Subject>) -> Binding<Subject> { fatalError("stand-in") }
}

/// "A binding conforms to Sendable only if its wrapped value type also conforms to Sendable."
extension Binding: @unchecked Sendable where Value: Sendable {}

/// developer.apple.com/documentation/swiftui/bindable
@propertyWrapper @dynamicMemberLookup public struct Bindable<Value> {
    public init(wrappedValue: Value) where Value: AnyObject & Observable {}
    public init(_ wrappedValue: Value) where Value: AnyObject & Observable {}
    public var wrappedValue: Value { fatalError("stand-in") }
    public var projectedValue: Bindable<Value> { self }
    public subscript<Subject>(dynamicMember keyPath: ReferenceWritableKeyPath<Value, Subject>) -> Binding<Subject> where Value: AnyObject {
        fatalError("stand-in")
    }
}

/// developer.apple.com/documentation/swiftui/environmentvalues
public struct EnvironmentValues {
    /// developer.apple.com/documentation/swiftui/environmentvalues/scenephase
    public var scenePhase: ScenePhase { fatalError("stand-in") }
}

/// developer.apple.com/documentation/swiftui/environment
@propertyWrapper public struct Environment<Value>: DynamicProperty {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    public var wrappedValue: Value { fatalError("stand-in") }
}

/// developer.apple.com/documentation/swiftui/uiapplicationdelegateadaptor
@MainActor @propertyWrapper public struct UIApplicationDelegateAdaptor<DelegateType: NSObject & UIApplicationDelegate>: DynamicProperty {
    public init(_ delegateType: DelegateType.Type = DelegateType.self) {}
    public var wrappedValue: DelegateType { fatalError("stand-in") }
}

// MARK: Colours, styles, fonts, shapes

/// developer.apple.com/documentation/swiftui/shapestyle
public protocol ShapeStyle: Sendable {}

/// developer.apple.com/documentation/swiftui/color — a Sendable value whose members are
/// nonisolated; its `View` conformance is a separate extension, as in the SDK.
public struct Color: ShapeStyle, Hashable, Sendable {
    public init(_ color: UIColor) {}
    public static let black = Color(UIColor())
    public static let white = Color(UIColor())
    public static let gray = Color(UIColor())
    public static let red = Color(UIColor())
    public static let green = Color(UIColor())
    public static let orange = Color(UIColor())
    public static let primary = Color(UIColor())
    public static let secondary = Color(UIColor())
    public static let accentColor = Color(UIColor())
}
extension Color: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
}
extension ShapeStyle where Self == Color {
    public static var black: Color { Color.black }
    public static var white: Color { Color.white }
    public static var gray: Color { Color.gray }
    public static var red: Color { Color.red }
    public static var green: Color { Color.green }
    public static var orange: Color { Color.orange }
    public static var accentColor: Color { Color.accentColor }
}

/// developer.apple.com/documentation/swiftui/hierarchicalshapestyle
public struct HierarchicalShapeStyle: ShapeStyle {
    public static let primary = HierarchicalShapeStyle()
    public static let secondary = HierarchicalShapeStyle()
}
extension ShapeStyle where Self == HierarchicalShapeStyle {
    public static var primary: HierarchicalShapeStyle { .primary }
    public static var secondary: HierarchicalShapeStyle { .secondary }
}

/// developer.apple.com/documentation/swiftui/material
public struct Material: ShapeStyle {
    public static let thinMaterial = Material()
    public static let regularMaterial = Material()
}
extension ShapeStyle where Self == Material {
    public static var thinMaterial: Material { .thinMaterial }
    public static var regularMaterial: Material { .regularMaterial }
}

/// developer.apple.com/documentation/swiftui/font
public struct Font: Hashable, Sendable {
    public static let largeTitle = Font()
    public static let title = Font()
    public static let title2 = Font()
    public static let headline = Font()
    public static let subheadline = Font()
    public static let body = Font()
    public static let callout = Font()
    public static let footnote = Font()
    public static let caption = Font()
    /// `func bold() -> Font`
    public func bold() -> Font { self }
}

/// developer.apple.com/documentation/swiftui/shape
public protocol Shape: View, Sendable {}

/// developer.apple.com/documentation/swiftui/roundedrectangle
public struct RoundedRectangle: Shape {
    public typealias Body = Never
    public nonisolated var body: Never { fatalError("stand-in") }
    public nonisolated init(cornerRadius: CGFloat) {}
}

/// developer.apple.com/documentation/swiftui/capsule
public struct Capsule: Shape {
    public typealias Body = Never
    public nonisolated var body: Never { fatalError("stand-in") }
    public nonisolated init() {}
}

// MARK: Layout values

public struct Edge {
    /// developer.apple.com/documentation/swiftui/edge/set
    public struct Set: OptionSet, Sendable {
        public var rawValue: Int8
        public init(rawValue: Int8) { self.rawValue = rawValue }
        public static let top = Set(rawValue: 1), leading = Set(rawValue: 2), bottom = Set(rawValue: 4), trailing = Set(rawValue: 8)
        public static let all: Set = [.top, .leading, .bottom, .trailing]
        public static let horizontal: Set = [.leading, .trailing]
        public static let vertical: Set = [.top, .bottom]
    }
}

/// developer.apple.com/documentation/swiftui/axis/set
public enum Axis {
    public struct Set: OptionSet, Sendable {
        public var rawValue: Int8
        public init(rawValue: Int8) { self.rawValue = rawValue }
        public static let horizontal = Set(rawValue: 1), vertical = Set(rawValue: 2)
    }
}

public struct HorizontalAlignment: Sendable {
    public static let leading = HorizontalAlignment(), center = HorizontalAlignment(), trailing = HorizontalAlignment()
}
public struct VerticalAlignment: Sendable {
    public static let top = VerticalAlignment(), center = VerticalAlignment(), bottom = VerticalAlignment()
}
public struct Alignment: Sendable {
    public static let top = Alignment(), center = Alignment(), bottom = Alignment(), leading = Alignment(), trailing = Alignment()
}

// MARK: Views

/// developer.apple.com/documentation/swiftui/text
public struct Text: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ content: S) where S : StringProtocol`
    public nonisolated init<S: StringProtocol>(_ content: S) {}
}

/// developer.apple.com/documentation/swiftui/image
public struct Image: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init(systemName: String) {}
    public nonisolated init(uiImage: UIImage) {}
    /// `func resizable(capInsets: EdgeInsets = EdgeInsets(), resizingMode: Image.ResizingMode = .stretch) -> Image`
    public func resizable() -> Image { self }
}

/// developer.apple.com/documentation/swiftui/label
public struct Label: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, systemImage name: String) where S : StringProtocol`
    public nonisolated init<S: StringProtocol>(_ title: S, systemImage name: String) {}
}

/// developer.apple.com/documentation/swiftui/buttonrole
public struct ButtonRole: Equatable, Sendable {
    public static let destructive = ButtonRole(), cancel = ButtonRole()
}

/// developer.apple.com/documentation/swiftui/button
public struct Button<Label: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(action: @escaping () -> Void, @ViewBuilder label: () -> Label)`
    public init(action: @escaping () -> Void, @ViewBuilder label: () -> Label) {}
}
extension Button where Label == Text {
    /// `init<S>(_ title: S, action: @escaping () -> Void) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, action: @escaping () -> Void) {}
    /// `init<S>(_ title: S, role: ButtonRole?, action: @escaping () -> Void) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, role: ButtonRole?, action: @escaping () -> Void) {}
}

/// developer.apple.com/documentation/swiftui/toggle
public struct Toggle: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, isOn: Binding<Bool>) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, isOn: Binding<Bool>) {}
}

/// developer.apple.com/documentation/swiftui/textfield
public struct TextField: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, text: Binding<String>) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, text: Binding<String>) {}
}

/// developer.apple.com/documentation/swiftui/securefield
public struct SecureField: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init<S: StringProtocol>(_ title: S, text: Binding<String>) {}
}

/// developer.apple.com/documentation/swiftui/picker
public struct Picker<SelectionValue: Hashable, Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init<S>(_ title: S, selection: Binding<SelectionValue>, @ViewBuilder content: () -> Content) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, selection: Binding<SelectionValue>, @ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/progressview
public struct ProgressView: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init<S: StringProtocol>(_ title: S) {}
}

/// developer.apple.com/documentation/swiftui/spacer
public struct Spacer: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public nonisolated init(minLength: CGFloat? = nil) {}
}

/// A container of one `@ViewBuilder` closure (List, Form, Group, NavigationStack, ZStack,
/// ScrollView share this shape in the stand-in).
public struct List<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}
public struct Form<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}
public struct Group<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder content: () -> Content) {}
}
public struct NavigationStack<Root: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(@ViewBuilder root: () -> Root) {}
}
public struct ZStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(alignment: Alignment = .center, @ViewBuilder content: () -> Content) {}
}
public struct ScrollView<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(_ axes: Axis.Set = .vertical, showsIndicators: Bool = true, @ViewBuilder content: () -> Content) {}
}
/// developer.apple.com/documentation/swiftui/vstack — `init(alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil, content:)`
public struct VStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(alignment: HorizontalAlignment = .center, spacing: CGFloat? = nil, @ViewBuilder content: () -> Content) {}
}
/// developer.apple.com/documentation/swiftui/hstack
public struct HStack<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(alignment: VerticalAlignment = .center, spacing: CGFloat? = nil, @ViewBuilder content: () -> Content) {}
}
/// developer.apple.com/documentation/swiftui/viewthatfits — `init(in axes: Axis.Set = [.horizontal, .vertical], content:)`
public struct ViewThatFits<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    public init(in axes: Axis.Set = [.horizontal, .vertical], @ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/section (header and footer collapsed).
public struct Section<Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(@ViewBuilder content: () -> Content)`
    public init(@ViewBuilder content: () -> Content) {}
    /// `init<S>(_ title: S, @ViewBuilder content: () -> Content) where S : StringProtocol`
    public init<S: StringProtocol>(_ title: S, @ViewBuilder content: () -> Content) {}
}

/// developer.apple.com/documentation/swiftui/foreach
public struct ForEach<Data: RandomAccessCollection, ID: Hashable, Content: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content)`
    public init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content) {}
}
extension ForEach where ID == Data.Element.ID, Data.Element: Identifiable {
    /// `init(_ data: Data, @ViewBuilder content: @escaping (Data.Element) -> Content)`
    public init(_ data: Data, @ViewBuilder content: @escaping (Data.Element) -> Content) {}
}

/// developer.apple.com/documentation/swiftui/navigationlink
public struct NavigationLink<Label: View, Destination: View>: View {
    public typealias Body = Never
    public var body: Never { fatalError("stand-in") }
    /// `init(@ViewBuilder destination: () -> Destination, @ViewBuilder label: () -> Label)`
    public init(@ViewBuilder destination: () -> Destination, @ViewBuilder label: () -> Label) {}
}
extension NavigationLink where Destination == Never {
    /// `init<P>(value: P?, @ViewBuilder label: () -> Label) where P : Hashable`
    public init<P: Hashable>(value: P?, @ViewBuilder label: () -> Label) {}
}

/// developer.apple.com/documentation/swiftui/uiviewrepresentable
@MainActor @preconcurrency public protocol UIViewRepresentable: View where Body == Never {
    associatedtype UIViewType: UIView
    typealias Context = UIViewRepresentableContext<Self>
    func makeUIView(context: Context) -> UIViewType
    func updateUIView(_ uiView: UIViewType, context: Context)
}
extension UIViewRepresentable {
    public var body: Never { fatalError("stand-in") }
}
public struct UIViewRepresentableContext<Representable: UIViewRepresentable> {}

// MARK: Modifier values

/// developer.apple.com/documentation/swiftui/accessibilitychildbehavior
public struct AccessibilityChildBehavior: Sendable {
    public static let ignore = AccessibilityChildBehavior(), contain = AccessibilityChildBehavior(), combine = AccessibilityChildBehavior()
}
public protocol PrimitiveButtonStyle {}
public struct BorderedProminentButtonStyle: PrimitiveButtonStyle {}
public struct BorderedButtonStyle: PrimitiveButtonStyle {}
public struct BorderlessButtonStyle: PrimitiveButtonStyle {}
extension PrimitiveButtonStyle where Self == BorderedProminentButtonStyle { public static var borderedProminent: Self { .init() } }
extension PrimitiveButtonStyle where Self == BorderedButtonStyle { public static var bordered: Self { .init() } }
extension PrimitiveButtonStyle where Self == BorderlessButtonStyle { public static var borderless: Self { .init() } }
/// developer.apple.com/documentation/swiftui/controlsize
public enum ControlSize: Sendable { case mini, small, regular, large, extraLarge }
/// developer.apple.com/documentation/swiftui/textinputautocapitalization
public struct TextInputAutocapitalization: Sendable {
    public static let never = TextInputAutocapitalization(), words = TextInputAutocapitalization(),
                      sentences = TextInputAutocapitalization(), characters = TextInputAutocapitalization()
}
public enum ContentMode: Sendable { case fit, fill }

// MARK: Modifiers (developer.apple.com/documentation/swiftui/view, "Instance Methods")

extension View {
    public func font(_ font: Font?) -> some View { _StubView() }
    public func padding(_ length: CGFloat? = nil) -> some View { _StubView() }
    public func padding(_ edges: Edge.Set = .all, _ length: CGFloat? = nil) -> some View { _StubView() }
    public func frame(width: CGFloat? = nil, height: CGFloat? = nil, alignment: Alignment = .center) -> some View { _StubView() }
    public func frame(minWidth: CGFloat? = nil, idealWidth: CGFloat? = nil, maxWidth: CGFloat? = nil, minHeight: CGFloat? = nil,
                      idealHeight: CGFloat? = nil, maxHeight: CGFloat? = nil, alignment: Alignment = .center) -> some View { _StubView() }
    /// `func background<S>(_ style: S, ignoresSafeAreaEdges edges: Edge.Set = .all) -> some View where S : ShapeStyle`
    public func background<S: ShapeStyle>(_ style: S, ignoresSafeAreaEdges edges: Edge.Set = .all) -> some View { _StubView() }
    /// `func background<S, T>(_ style: S, in shape: T, fillStyle: FillStyle = FillStyle()) -> some View where S : ShapeStyle, T : Shape`
    public func background<S: ShapeStyle, T: Shape>(_ style: S, in shape: T) -> some View { _StubView() }
    /// `func foregroundStyle<S>(_ style: S) -> some View where S : ShapeStyle`
    public func foregroundStyle<S: ShapeStyle>(_ style: S) -> some View { _StubView() }
    /// `func tint(_ tint: Color?) -> some View`
    public func tint(_ tint: Color?) -> some View { _StubView() }
    /// `func tint<S>(_ tint: S?) -> some View where S : ShapeStyle`
    public func tint<S: ShapeStyle>(_ tint: S?) -> some View { _StubView() }
    public func onTapGesture(count: Int = 1, perform action: @escaping () -> Void) -> some View { _StubView() }
    public func accessibilityLabel<S: StringProtocol>(_ label: S) -> some View { _StubView() }
    public func accessibilityHint<S: StringProtocol>(_ hint: S) -> some View { _StubView() }
    public func accessibilityElement(children: AccessibilityChildBehavior = .ignore) -> some View { _StubView() }
    public func ignoresSafeArea(_ regions: Int = 0, edges: Edge.Set = .all) -> some View { _StubView() }
    public func clipShape<S: Shape>(_ shape: S) -> some View { _StubView() }
    public func buttonStyle<S: PrimitiveButtonStyle>(_ style: S) -> some View { _StubView() }
    public func controlSize(_ controlSize: ControlSize) -> some View { _StubView() }
    public func disabled(_ disabled: Bool) -> some View { _StubView() }
    public func navigationTitle<S: StringProtocol>(_ title: S) -> some View { _StubView() }
    /// `func navigationDestination<D, C>(for data: D.Type, @ViewBuilder destination: @escaping (D) -> C) -> some View where D : Hashable, C : View`
    public func navigationDestination<D: Hashable, C: View>(for data: D.Type, @ViewBuilder destination: @escaping (D) -> C) -> some View { _StubView() }
    /// `func navigationDestination<D, C>(item: Binding<Optional<D>>, @ViewBuilder destination: @escaping (D) -> C) -> some View where D : Hashable, C : View`
    public func navigationDestination<D: Hashable, C: View>(item: Binding<D?>, @ViewBuilder destination: @escaping (D) -> C) -> some View { _StubView() }
    /// `func toolbar<Content>(@ViewBuilder content: () -> Content) -> some View where Content : View`
    public func toolbar<Content: View>(@ViewBuilder content: () -> Content) -> some View { _StubView() }
    /// `func refreshable(action: @escaping @Sendable () async -> Void) -> some View`
    public func refreshable(@_inheritActorContext action: @escaping @Sendable () async -> Void) -> some View { _StubView() }
    /// `func task(priority: TaskPriority = .userInitiated, _ action: @escaping @Sendable () async -> Void) -> some View`
    public func task(priority: TaskPriority = .userInitiated, @_inheritActorContext _ action: @escaping @Sendable () async -> Void) -> some View {
        _StubView()
    }
    /// `func task<T>(id value: T, priority: TaskPriority = .userInitiated, _ action: @escaping @Sendable () async -> Void) -> some View where T : Equatable`
    public func task<T: Equatable>(id value: T, priority: TaskPriority = .userInitiated,
                                   @_inheritActorContext _ action: @escaping @Sendable () async -> Void) -> some View { _StubView() }
    /// `func onChange<V>(of value: V, initial: Bool = false, _ action: @escaping (V, V) -> Void) -> some View where V : Equatable`
    public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (_ oldValue: V, _ newValue: V) -> Void) -> some View {
        _StubView()
    }
    public func onDisappear(perform action: (() -> Void)? = nil) -> some View { _StubView() }
    public func onAppear(perform action: (() -> Void)? = nil) -> some View { _StubView() }
    /// `func sheet<Content>(isPresented: Binding<Bool>, onDismiss: (() -> Void)? = nil, @ViewBuilder content: @escaping () -> Content) -> some View`
    public func sheet<Content: View>(isPresented: Binding<Bool>, onDismiss: (() -> Void)? = nil,
                                     @ViewBuilder content: @escaping () -> Content) -> some View { _StubView() }
    /// `func fullScreenCover<Item, Content>(item: Binding<Item?>, onDismiss: (() -> Void)? = nil,
    /// @ViewBuilder content: @escaping (Item) -> Content) -> some View where Item : Identifiable, Content : View`
    public func fullScreenCover<Item: Identifiable, Content: View>(item: Binding<Item?>, onDismiss: (() -> Void)? = nil,
                                                                   @ViewBuilder content: @escaping (Item) -> Content) -> some View { _StubView() }
    /// `func overlay<V>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> some View where V : View`
    public func overlay<V: View>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> some View { _StubView() }
    public func interactiveDismissDisabled(_ isDisabled: Bool = true) -> some View { _StubView() }
    public func textContentType(_ textContentType: UITextContentType?) -> some View { _StubView() }
    public func textInputAutocapitalization(_ autocapitalization: TextInputAutocapitalization?) -> some View { _StubView() }
    public func autocorrectionDisabled(_ disable: Bool = true) -> some View { _StubView() }
    public func keyboardType(_ type: UIKeyboardType) -> some View { _StubView() }
    public func tag<V: Hashable>(_ tag: V) -> some View { _StubView() }
    public func scaledToFit() -> some View { _StubView() }
    public func aspectRatio(_ aspectRatio: CGFloat? = nil, contentMode: ContentMode) -> some View { _StubView() }
}
